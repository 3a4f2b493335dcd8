# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/slurm.conf.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_slurm = resolve('slurm')
    l_0_slurm_user = resolve('slurm_user')
    l_0_site = resolve('site')
    l_0_slurmctld_port = resolve('slurmctld_port')
    l_0_slurmd_port = resolve('slurmd_port')
    l_0_hosted = resolve('hosted')
    l_0_auth_alt = resolve('auth_alt')
    l_0_mpi_default = resolve('mpi_default')
    l_0_mpi_params = resolve('mpi_params')
    l_0_gres_types = resolve('gres_types')
    l_0_task_plugin = resolve('task_plugin')
    l_0_scheduler_parameters = resolve('scheduler_parameters')
    l_0_slurm_time = resolve('slurm_time')
    l_0_priority_weights = resolve('priority_weights')
    l_0_preempt_type = resolve('preempt_type')
    l_0_preempt_mode = resolve('preempt_mode')
    l_0_topology = resolve('topology')
    l_0_accounting_storage_none = resolve('accounting_storage_none')
    l_0_accounting_tres = resolve('accounting_tres')
    l_0_health_check = resolve('health_check')
    l_0_health_check_program = resolve('health_check_program')
    l_0_power_saving = resolve('power_saving')
    l_0_options = resolve('options')
    l_0_reserve_percent = resolve('reserve_percent')
    l_0_reserve_min = resolve('reserve_min')
    l_0_reserve_max_percent = resolve('reserve_max_percent')
    l_0_nodes = resolve('nodes')
    l_0_nodesets = resolve('nodesets')
    l_0_partitions = resolve('partitions')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    try:
        t_2 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_3 = environment.filters['upper']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'upper' found.")
    pass
    l_1_file = 'slurm.conf'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/slurm.conf.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '\nClusterName='
    yield str(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'cluster_name'))
    yield '\n'
    for l_1_host in environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'controllers'):
        _loop_vars = {}
        pass
        yield 'SlurmctldHost='
        yield str(l_1_host)
        if (l_1_host in environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'controller_addresses')):
            pass
            yield '('
            yield str(environment.getitem(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'controller_addresses'), l_1_host))
            yield ')'
        yield '\n'
    l_1_host = missing
    yield 'SlurmUser='
    yield str((undefined(name='slurm_user') if l_0_slurm_user is missing else l_0_slurm_user))
    yield '\n'
    if environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'slurmd_user'):
        pass
        yield 'SlurmdUser='
        yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'slurmd_user'))
        yield '\n'
    yield 'SlurmctldPort='
    yield str((undefined(name='slurmctld_port') if l_0_slurmctld_port is missing else l_0_slurmctld_port))
    yield '\nSlurmdPort='
    yield str((undefined(name='slurmd_port') if l_0_slurmd_port is missing else l_0_slurmd_port))
    yield '\n'
    if (undefined(name='hosted') if l_0_hosted is missing else l_0_hosted):
        pass
        yield '# Slurm pools hosted in Kubernetes (Slinky) join this slurmctld: their slurmd authenticate\n# with the auth/slurm key (/etc/slurm/slurm.key) and fetch this file from it (configless).\n'
        for (l_1_key, l_1_value) in environment.getattr((undefined(name='hosted') if l_0_hosted is missing else l_0_hosted), 'auth'):
            _loop_vars = {}
            pass
            yield str(l_1_key)
            yield '='
            yield str(l_1_value)
            yield '\n'
        l_1_key = l_1_value = missing
    else:
        pass
        yield 'AuthType=auth/munge\nCredType=cred/munge\n'
    l_1_loop = missing
    for (l_1_key, l_1_value), l_1_loop in LoopContext((undefined(name='auth_alt') if l_0_auth_alt is missing else l_0_auth_alt), undefined):
        _loop_vars = {}
        pass
        if environment.getattr(l_1_loop, 'first'):
            pass
            yield "# JSON Web Tokens for slurmrestd's clients (slurm.rest_api); the key file is mode 0400, owned\n# by SlurmUser, from Ansible Vault.\n"
        yield str(l_1_key)
        yield '='
        yield str(l_1_value)
        yield '\n'
    l_1_loop = l_1_key = l_1_value = missing
    if (t_2(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'controllers')) > 1):
        pass
        yield '# Backup controllers read the same state: StateSaveLocation must be shared storage.\n'
    yield 'StateSaveLocation='
    yield str(environment.getattr(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'paths'), 'state_save_location'))
    yield '\nSlurmdSpoolDir='
    yield str(environment.getattr(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'paths'), 'slurmd_spool_dir'))
    yield '\nSlurmctldPidFile='
    yield str(environment.getattr(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'paths'), 'slurmctld_pid_file'))
    yield '\nSlurmdPidFile='
    yield str(environment.getattr(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'paths'), 'slurmd_pid_file'))
    yield '\nSlurmctldLogFile='
    yield str(environment.getattr(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'paths'), 'slurmctld_log_file'))
    yield '\nSlurmdLogFile='
    yield str(environment.getattr(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'paths'), 'slurmd_log_file'))
    yield '\nReturnToService='
    yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'return_to_service'))
    yield '\nMpiDefault='
    yield str((undefined(name='mpi_default') if l_0_mpi_default is missing else l_0_mpi_default))
    yield '\n'
    if (undefined(name='mpi_params') if l_0_mpi_params is missing else l_0_mpi_params):
        pass
        yield 'MpiParams='
        yield str((undefined(name='mpi_params') if l_0_mpi_params is missing else l_0_mpi_params))
        yield '\n'
    yield '\n# Resources and isolation\nSelectType=select/'
    yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'select_type'))
    yield '\n'
    if environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'select_parameters'):
        pass
        yield 'SelectTypeParameters='
        yield str(t_1(context.eval_ctx, environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'select_parameters'), ','))
        yield '\n'
    if (undefined(name='gres_types') if l_0_gres_types is missing else l_0_gres_types):
        pass
        yield 'GresTypes='
        yield str((undefined(name='gres_types') if l_0_gres_types is missing else l_0_gres_types))
        yield '\n'
    yield 'ProctrackType=proctrack/'
    yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'proctrack'))
    yield '\nTaskPlugin='
    yield str((undefined(name='task_plugin') if l_0_task_plugin is missing else l_0_task_plugin))
    yield '\nJobAcctGatherType=jobacct_gather/'
    yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'job_acct_gather'))
    yield '\n'
    if environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'prolog_flags'):
        pass
        yield 'PrologFlags='
        yield str(t_1(context.eval_ctx, environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'prolog_flags'), ','))
        yield '\n'
    yield '\n# Scheduling\nSchedulerType=sched/'
    yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'scheduler'))
    yield '\n'
    if (undefined(name='scheduler_parameters') if l_0_scheduler_parameters is missing else l_0_scheduler_parameters):
        pass
        yield 'SchedulerParameters='
        yield str((undefined(name='scheduler_parameters') if l_0_scheduler_parameters is missing else l_0_scheduler_parameters))
        yield '\n'
    yield 'PriorityType=priority/'
    yield str(environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'scheduling'), 'priority_type'))
    yield '\n'
    if environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'scheduling'), 'fairshare_half_life'):
        pass
        yield 'PriorityDecayHalfLife='
        yield str(context.call((undefined(name='slurm_time') if l_0_slurm_time is missing else l_0_slurm_time), environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'scheduling'), 'fairshare_half_life')))
        yield '\n'
    for (l_1_key, l_1_value) in (undefined(name='priority_weights') if l_0_priority_weights is missing else l_0_priority_weights):
        _loop_vars = {}
        pass
        yield str(l_1_key)
        yield '='
        yield str(l_1_value)
        yield '\n'
    l_1_key = l_1_value = missing
    if environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'scheduling'), 'priority_weight_tres'):
        pass
        yield 'PriorityWeightTRES='
        l_1_loop = missing
        for (l_1_key, l_1_value), l_1_loop in LoopContext(environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'scheduling'), 'priority_weight_tres'), undefined):
            _loop_vars = {}
            pass
            yield str(l_1_key)
            yield '='
            yield str(l_1_value)
            yield str((',' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 74 in 'slurm/slurm.conf.j2' evaluated to false and no else section was defined.")))
        l_1_loop = l_1_key = l_1_value = missing
        yield '\n'
    if (environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'enforce_part_limits') == 'all'):
        pass
        yield '# Refuse jobs that break partition limits (time, accounts) at submission instead of queueing them.\n'
    yield 'EnforcePartLimits='
    yield str(('NO' if (environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'enforce_part_limits') == 'none') else t_3(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'enforce_part_limits'))))
    yield '\nPreemptType='
    yield str((undefined(name='preempt_type') if l_0_preempt_type is missing else l_0_preempt_type))
    yield '\nPreemptMode='
    yield str((undefined(name='preempt_mode') if l_0_preempt_mode is missing else l_0_preempt_mode))
    yield '\n'
    if (undefined(name='topology') if l_0_topology is missing else l_0_topology):
        pass
        yield 'TopologyPlugin=topology/'
        yield str((undefined(name='topology') if l_0_topology is missing else l_0_topology))
        yield '\n'
    yield '\n# Accounting\n'
    if environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'accounting'):
        pass
        yield 'AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost='
        yield str(environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'accounting'), 'host'))
        yield '\nAccountingStoragePort='
        yield str(environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'accounting'), 'port'))
        yield '\n'
        if environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'accounting'), 'enforce'):
            pass
            yield 'AccountingStorageEnforce='
            yield str(t_1(context.eval_ctx, environment.getattr(environment.getattr((undefined(name='slurm') if l_0_slurm is missing else l_0_slurm), 'accounting'), 'enforce'), ','))
            yield '\n'
    elif (undefined(name='accounting_storage_none') if l_0_accounting_storage_none is missing else l_0_accounting_storage_none):
        pass
        yield 'AccountingStorageType=accounting_storage/none\n'
    if (undefined(name='accounting_tres') if l_0_accounting_tres is missing else l_0_accounting_tres):
        pass
        yield 'AccountingStorageTRES='
        yield str((undefined(name='accounting_tres') if l_0_accounting_tres is missing else l_0_accounting_tres))
        yield '\n'
    yield 'JobCompType=jobcomp/'
    yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'job_completion'))
    yield '\n'
    if (environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'job_completion') != 'none'):
        pass
        yield 'JobCompLoc='
        yield str(environment.getattr((undefined(name='site') if l_0_site is missing else l_0_site), 'job_completion_location'))
        yield '\n'
    if (undefined(name='health_check') if l_0_health_check is missing else l_0_health_check):
        pass
        yield "\n# Node health (slurm.health_check): slurmd runs its pool's rendered program when it starts and\n# every HealthCheckInterval seconds; a failed check drains the node with a reason naming it.\nHealthCheckProgram="
        yield str((undefined(name='health_check_program') if l_0_health_check_program is missing else l_0_health_check_program))
        yield '\nHealthCheckInterval='
        yield str(environment.getattr((undefined(name='health_check') if l_0_health_check is missing else l_0_health_check), 'interval'))
        yield '\nHealthCheckNodeState='
        yield str(t_3(t_1(context.eval_ctx, environment.getattr((undefined(name='health_check') if l_0_health_check is missing else l_0_health_check), 'node_state'), ',')))
        yield '\n'
    if ((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving) and environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'own')):
        pass
        yield "\n# Cloud nodes (Slurm pools with a provider): State=CLOUD nodes start powered down; slurmctld\n# runs ResumeProgram to create the instances a job needs and SuspendProgram to delete those\n# idle for SuspendTime seconds, or that did not register within ResumeTimeout. A node's\n# address is the one its slurmd registers from (cloud_reg_addrs); a deleted node that was down\n# returns idle (idle_on_node_suspend). slurmd messages are not forwarded through other nodes\n# (TreeWidth), and sinfo shows powered-down cloud nodes (PrivateData=cloud).\n"
    elif (undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving):
        pass
        yield "\n# Cloud nodes (Slurm pools with state: cloud): State=CLOUD nodes start powered down; slurmctld\n# runs the site's ResumeProgram to start the nodes a job needs and its SuspendProgram to stop\n# those idle for SuspendTime seconds (without a program it only waits for the nodes' slurmd).\n"
    if (undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving):
        pass
        for (l_1_key, l_1_program) in environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'programs'):
            _loop_vars = {}
            pass
            yield str(l_1_key)
            yield '='
            yield str(l_1_program)
            yield '\n'
        l_1_key = l_1_program = missing
        yield 'SuspendTime='
        yield str(environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'suspend_time'))
        yield '\nResumeTimeout='
        yield str(environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'resume_timeout'))
        yield '\nSuspendTimeout='
        yield str(environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'suspend_timeout'))
        yield '\n'
        if environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'exclude'):
            pass
            yield 'SuspendExcNodes='
            yield str(environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'exclude'))
            yield '\n'
    if ((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving) and environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'own')):
        pass
        yield 'SlurmctldParameters=cloud_reg_addrs,idle_on_node_suspend'
        if (undefined(name='hosted') if l_0_hosted is missing else l_0_hosted):
            pass
            yield ','
            yield str(t_1(context.eval_ctx, environment.getattr((undefined(name='hosted') if l_0_hosted is missing else l_0_hosted), 'ctld_parameters'), ','))
        yield '\nTreeWidth='
        yield str(environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'tree_width'))
        yield '\nPrivateData=cloud\n'
    if ((undefined(name='hosted') if l_0_hosted is missing else l_0_hosted) and (not ((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving) and environment.getattr((undefined(name='power_saving') if l_0_power_saving is missing else l_0_power_saving), 'own')))):
        pass
        yield 'SlurmctldParameters='
        yield str(t_1(context.eval_ctx, environment.getattr((undefined(name='hosted') if l_0_hosted is missing else l_0_hosted), 'ctld_parameters'), ','))
        yield '\n'
    if (undefined(name='options') if l_0_options is missing else l_0_options):
        pass
        yield '\n# Passed through from slurm.options\n'
        for (l_1_key, l_1_value) in (undefined(name='options') if l_0_options is missing else l_0_options):
            _loop_vars = {}
            pass
            yield str(l_1_key)
            yield '='
            yield str(l_1_value)
            yield '\n'
        l_1_key = l_1_value = missing
    yield '\n# Nodes: one line per pool. RealMemory keeps '
    yield str((undefined(name='reserve_percent') if l_0_reserve_percent is missing else l_0_reserve_percent))
    yield '% of physical memory\n# (at least '
    yield str((undefined(name='reserve_min') if l_0_reserve_min is missing else l_0_reserve_min))
    yield ' MiB, at most '
    yield str((undefined(name='reserve_max_percent') if l_0_reserve_max_percent is missing else l_0_reserve_max_percent))
    yield '%) for the OS and daemons.\n'
    for l_1_node in (undefined(name='nodes') if l_0_nodes is missing else l_0_nodes):
        _loop_vars = {}
        pass
        yield '# pool '
        yield str(environment.getattr(l_1_node, 'pool'))
        yield '\nNodeName='
        yield str(environment.getattr(l_1_node, 'hosts'))
        if environment.getattr(l_1_node, 'addresses'):
            pass
            yield ' NodeAddr='
            yield str(environment.getattr(l_1_node, 'addresses'))
        if environment.getattr(l_1_node, 'cpus'):
            pass
            yield ' CPUs='
            yield str(environment.getattr(l_1_node, 'cpus'))
        yield ' Sockets='
        yield str(environment.getattr(l_1_node, 'sockets'))
        yield ' CoresPerSocket='
        yield str(environment.getattr(l_1_node, 'cores_per_socket'))
        yield ' ThreadsPerCore='
        yield str(environment.getattr(l_1_node, 'threads_per_core'))
        yield ' RealMemory='
        yield str(environment.getattr(l_1_node, 'real_memory'))
        if environment.getattr(l_1_node, 'gres'):
            pass
            yield ' Gres='
            yield str(environment.getattr(l_1_node, 'gres'))
        if environment.getattr(l_1_node, 'features'):
            pass
            yield ' Feature='
            yield str(environment.getattr(l_1_node, 'features'))
        yield ' Weight='
        yield str(environment.getattr(l_1_node, 'weight'))
        yield ' State='
        yield str(environment.getattr(l_1_node, 'state'))
        yield '\n'
    l_1_node = missing
    if (undefined(name='hosted') if l_0_hosted is missing else l_0_hosted):
        pass
        yield "\n# Hosted pools: slurmd pods of Slinky NodeSets register as dynamic nodes (slurmd -Z) with\n# their NodeSet's name as a feature; each NodeSet below gathers them for the partitions.\nMaxNodeCount="
        yield str(environment.getattr((undefined(name='hosted') if l_0_hosted is missing else l_0_hosted), 'max_node_count'))
        yield '\n'
        for (l_1_name, l_1_feature) in environment.getattr((undefined(name='hosted') if l_0_hosted is missing else l_0_hosted), 'nodesets'):
            _loop_vars = {}
            pass
            yield 'NodeSet='
            yield str(l_1_name)
            yield ' Feature='
            yield str(l_1_feature)
            yield '\n'
        l_1_name = l_1_feature = missing
    if (undefined(name='nodesets') if l_0_nodesets is missing else l_0_nodesets):
        pass
        yield '\n# NodeSets the partitions name (slurm.partitions[].nodeset)\n'
        for (l_1_name, l_1_hosts) in (undefined(name='nodesets') if l_0_nodesets is missing else l_0_nodesets):
            _loop_vars = {}
            pass
            yield 'NodeSet='
            yield str(l_1_name)
            yield ' Nodes='
            yield str(l_1_hosts)
            yield '\n'
        l_1_name = l_1_hosts = missing
    yield '\n# Partitions\n'
    for l_1_part in (undefined(name='partitions') if l_0_partitions is missing else l_0_partitions):
        _loop_vars = {}
        pass
        yield 'PartitionName='
        yield str(environment.getattr(l_1_part, 'name'))
        for (l_2_key, l_2_value) in environment.getattr(l_1_part, 'fields'):
            _loop_vars = {}
            pass
            yield ' '
            yield str(l_2_key)
            yield '='
            yield str(l_2_value)
        l_2_key = l_2_value = missing
        yield '\n'
    l_1_part = missing

blocks = {}
debug_info = '1=60&3=68&4=70&5=74&8=83&9=85&10=88&12=91&13=93&14=95&17=98&18=101&24=110&25=113&29=116&31=121&34=125&35=127&36=129&37=131&38=133&39=135&40=137&41=139&42=141&43=144&47=147&48=149&49=152&51=154&52=157&54=160&55=162&56=164&57=166&58=169&62=172&63=174&64=177&66=180&67=182&68=185&70=187&71=190&73=195&74=199&77=208&80=212&81=214&82=216&83=218&84=221&88=224&90=227&91=229&92=231&93=234&95=236&98=239&99=242&101=245&102=247&103=250&105=252&109=255&110=257&111=259&113=261&121=264&127=267&128=269&129=272&131=278&132=280&133=282&134=284&135=287&138=289&139=292&141=297&144=299&145=302&147=304&150=307&151=310&155=316&156=318&157=322&158=326&159=328&161=359&165=362&166=364&167=368&170=373&173=376&174=380&179=386&180=390'