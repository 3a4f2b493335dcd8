# Written by `python -m estategen.templating` from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/qos.sacctmgr.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_qos = resolve('qos')
    l_0_parent = resolve('parent')
    l_0_cluster = resolve('cluster')
    l_0_default_qos = resolve('default_qos')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    try:
        t_2 = environment.filters['map']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'map' found.")
    try:
        t_3 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    l_1_file = 'qos.sacctmgr'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/qos.sacctmgr.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '# QoS definitions, which `sacctmgr load` does not carry. Two steps:\n# 1. the `add qos` lines, after sacct.cfg is loaded and before slurmctld starts (partitions\n#    name QoS that slurmctld must find); a QoS that exists reports "Nothing new added";\n# 2. the other lines, once slurmctld has registered its GPU TRES: they set every value and\n#    grant the QoS to every account of the estate.\n'
    for l_1_q in (undefined(name='qos') if l_0_qos is missing else l_0_qos):
        _loop_vars = {}
        pass
        yield 'add qos '
        yield str(environment.getattr(l_1_q, 'name'))
        yield '\n'
    l_1_q = missing
    for l_1_q in (undefined(name='qos') if l_0_qos is missing else l_0_qos):
        l_1_gpu_tres = resolve('gpu_tres')
        l_1_slurm_time = resolve('slurm_time')
        _loop_vars = {}
        pass
        yield 'modify qos where name='
        yield str(environment.getattr(l_1_q, 'name'))
        yield ' set Priority='
        yield str(environment.getattr(l_1_q, 'priority'))
        yield ' UsageFactor='
        yield str(environment.getattr(l_1_q, 'usage_factor'))
        if environment.getattr(l_1_q, 'preempt'):
            pass
            yield ' Preempt='
            yield str(t_1(context.eval_ctx, environment.getattr(l_1_q, 'preempt'), ','))
        if (undefined(name='gpu_tres') if l_1_gpu_tres is missing else l_1_gpu_tres):
            pass
            yield ' MaxTRESPerUser='
            yield str((('gres/gpu=%d' % environment.getattr(l_1_q, 'max_gpus_per_user')) if (not t_3(environment.getattr(l_1_q, 'max_gpus_per_user'))) else 'gres/gpu=-1'))
        yield ' MaxWall='
        yield str((context.call((undefined(name='slurm_time') if l_1_slurm_time is missing else l_1_slurm_time), environment.getattr(l_1_q, 'max_time'), _loop_vars=_loop_vars) if environment.getattr(l_1_q, 'max_time') else '-1'))
        yield '\n'
    l_1_q = l_1_gpu_tres = l_1_slurm_time = missing
    yield 'modify account where name='
    yield str((undefined(name='parent') if l_0_parent is missing else l_0_parent))
    yield ' cluster='
    yield str((undefined(name='cluster') if l_0_cluster is missing else l_0_cluster))
    yield ' set QOS='
    yield str(t_1(context.eval_ctx, t_2(context, (undefined(name='qos') if l_0_qos is missing else l_0_qos), attribute='name'), ','))
    if (undefined(name='default_qos') if l_0_default_qos is missing else l_0_default_qos):
        pass
        yield ' DefaultQOS='
        yield str((undefined(name='default_qos') if l_0_default_qos is missing else l_0_default_qos))
    yield '\n'

blocks = {}
debug_info = '1=35&7=43&8=47&10=50&11=56&13=74'