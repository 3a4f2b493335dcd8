# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/suspend.sh.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_pools = resolve('pools')
    pass
    yield '#!/bin/sh\n'
    l_1_file = 'power/suspend.sh'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/suspend.sh.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '#\n# SuspendProgram and ResumeFailProgram: slurmctld runs it as SlurmUser with the hostlist of\n# cloud nodes idle for SuspendTime seconds, or that did not register within ResumeTimeout\n# ($1). Each node\'s instance is deleted; slurmctld marks the node powered down, ready to be\n# created again.\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nexport PATH\n# slurmctld starts it with every descriptor closed: the CLI\'s output goes to the log\nexec </dev/null >>/var/log/slurm/power_save.log 2>&1\necho "$(date -u +%FT%TZ) $0 $*"\n[ $# -eq 1 ] || { echo "usage: $0 HOSTLIST" >&2; exit 2; }\nrequested=$(scontrol show hostnames "$1") || exit 1\nstatus=0\n'
    for l_1_pool in (undefined(name='pools') if l_0_pools is missing else l_0_pools):
        _loop_vars = {}
        pass
        yield '\n# pool '
        yield str(environment.getattr(l_1_pool, 'name'))
        yield ': '
        yield str(environment.getattr(l_1_pool, 'provider'))
        yield ' '
        yield str(environment.getattr(l_1_pool, 'instance_type'))
        yield '\ndelete_'
        yield str(environment.getattr(l_1_pool, 'function'))
        yield '() {\n'
        if (environment.getattr(l_1_pool, 'provider') == 'gke'):
            pass
            yield '    gcloud compute instances delete "$@" \\\n        --project='
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'project'))
            yield ' --zone='
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'zone'))
            yield ' --quiet\n'
        else:
            pass
            yield '    ids=$(aws ec2 describe-instances --region '
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'region'))
            yield ' \\\n        --filters "Name=tag:Name,Values=$(echo "$@" | tr \' \' \',\')" \\\n        "Name=tag:estategen-pool,Values='
            yield str(environment.getattr(l_1_pool, 'name'))
            yield '" \\\n        "Name=instance-state-name,Values=pending,running,stopping,stopped" \\\n        --query \'Reservations[].Instances[].InstanceId\' --output text) || return 1\n    [ -z "$ids" ] && return 0\n    # shellcheck disable=SC2086 # one argument per instance id\n    aws ec2 terminate-instances --region '
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'region'))
            yield ' --instance-ids $ids\n'
        yield '}\nnames=$(printf \'%s\\n\' "$requested" | grep -Fx -e "$(scontrol show hostnames \''
        yield str(environment.getattr(l_1_pool, 'hosts'))
        yield '\')")\nif [ -n "$names" ]; then\n    # shellcheck disable=SC2086 # one argument per node name\n    delete_'
        yield str(environment.getattr(l_1_pool, 'function'))
        yield ' $names || status=1\nfi\n'
    l_1_pool = missing
    yield 'exit $status\n'

blocks = {}
debug_info = '2=15&16=23&18=27&19=33&20=35&22=38&24=45&26=47&31=49&34=52&37=54'