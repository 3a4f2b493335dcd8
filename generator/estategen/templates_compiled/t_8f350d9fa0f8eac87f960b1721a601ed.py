# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/resume.sh.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_pools = resolve('pools')
    pass
    yield '#!/bin/sh\n'
    l_1_file = 'power/resume.sh'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/resume.sh.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '#\n# ResumeProgram: slurmctld runs it as SlurmUser with the hostlist of the cloud nodes to create\n# ($1), and nothing else in its environment but SLURM_CONF. Each node becomes an instance of\n# its pool\'s type, named after the node, from the pool\'s pinned image; the image starts\n# slurmd, which registers under that name (SlurmctldParameters=cloud_reg_addrs).\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nexport PATH\n# slurmctld starts it with every descriptor closed: the CLI\'s output goes to the log\nexec </dev/null >>/var/log/slurm/power_save.log 2>&1\necho "$(date -u +%FT%TZ) $0 $*"\n[ $# -eq 1 ] || { echo "usage: $0 HOSTLIST" >&2; exit 2; }\nrequested=$(scontrol show hostnames "$1") || exit 1\nstatus=0\n'
    for l_1_pool in (undefined(name='pools') if l_0_pools is missing else l_0_pools):
        _loop_vars = {}
        pass
        yield '\n# pool '
        yield str(environment.getattr(l_1_pool, 'name'))
        yield ': '
        yield str(environment.getattr(l_1_pool, 'provider'))
        yield ' '
        yield str(environment.getattr(l_1_pool, 'instance_type'))
        yield '\ncreate_'
        yield str(environment.getattr(l_1_pool, 'function'))
        yield '() {\n'
        if (environment.getattr(l_1_pool, 'provider') == 'gke'):
            pass
            yield '    gcloud compute instances create "$@" \\\n        --project='
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'project'))
            yield ' --zone='
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'zone'))
            yield ' \\\n        --machine-type='
            yield str(environment.getattr(l_1_pool, 'instance_type'))
            yield ' --image='
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'image'))
            yield ' \\\n'
            if environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'subnet'):
                pass
                yield '        --subnet='
                yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'subnet'))
                yield ' \\\n'
            yield '        --maintenance-policy=TERMINATE \\\n        --labels=estategen-estate='
            yield str(environment.getattr(l_1_pool, 'estate'))
            yield ',estategen-pool='
            yield str(environment.getattr(l_1_pool, 'name'))
            yield ' --quiet\n'
        else:
            pass
            yield '    for name in "$@"; do\n        aws ec2 run-instances --region '
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'region'))
            yield ' \\\n            --image-id '
            yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'image'))
            yield ' --instance-type '
            yield str(environment.getattr(l_1_pool, 'instance_type'))
            yield ' --count 1 \\\n'
            if environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'subnet'):
                pass
                yield '            --subnet-id '
                yield str(environment.getattr(environment.getattr(l_1_pool, 'cloud'), 'subnet'))
                yield ' \\\n'
            yield '            --tag-specifications "ResourceType=instance,Tags=[{Key=Name,Value=$name},{Key=estategen-estate,Value='
            yield str(environment.getattr(l_1_pool, 'estate'))
            yield '},{Key=estategen-pool,Value='
            yield str(environment.getattr(l_1_pool, 'name'))
            yield '}]" \\\n            --user-data "#!/bin/sh\nhostnamectl set-hostname $name" \\\n            --query \'Instances[0].InstanceId\' --output text || return 1\n    done\n'
        yield '}\nnames=$(printf \'%s\\n\' "$requested" | grep -Fx -e "$(scontrol show hostnames \''
        yield str(environment.getattr(l_1_pool, 'hosts'))
        yield '\')")\nif [ -n "$names" ]; then\n    # shellcheck disable=SC2086 # one argument per node name\n    create_'
        yield str(environment.getattr(l_1_pool, 'function'))
        yield ' $names || status=1\nfi\n'
    l_1_pool = missing
    yield 'exit $status\n'

blocks = {}
debug_info = '2=15&16=23&18=27&19=33&20=35&22=38&23=42&24=46&25=49&28=52&31=59&32=61&33=65&34=68&36=71&43=76&46=78'