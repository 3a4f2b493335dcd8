# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/healthcheck.sh.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_pool = resolve('pool')
    l_0_checks = resolve('checks')
    l_0_gpu_memory_low = resolve('gpu_memory_low')
    l_0_gpu_memory_high = resolve('gpu_memory_high')
    l_0_mig = resolve('mig')
    l_0_mounts = resolve('mounts')
    l_0_real_memory = resolve('real_memory')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    pass
    yield '#!/bin/sh\n'
    l_1_file = str_join(('healthcheck/', environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'name'), '.sh', ))
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/healthcheck.sh.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '#\n# Health check of pool '
    yield str(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'name'))
    yield ': slurmd runs it as root when it starts and every\n# HealthCheckInterval seconds. Slurm ignores the exit status, so a failed check drains this\n# node itself, with the reason "healthcheck CHECK: what was found". Checks: '
    yield str((t_1(context.eval_ctx, (undefined(name='checks') if l_0_checks is missing else l_0_checks), ', ') if (undefined(name='checks') if l_0_checks is missing else l_0_checks) else 'none'))
    yield '.\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nexport PATH\nnode=${SLURMD_NODENAME:-$(hostname -s)}\n\nfail() {\n    reason="healthcheck $1: $2"\n    echo "$node: $reason" >&2\n    scontrol update NodeName="$node" State=DRAIN Reason="$reason"\n    exit 1\n}\n'
    if ('gpus' in (undefined(name='checks') if l_0_checks is missing else l_0_checks)):
        pass
        yield '\n# gpus: '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'count'))
        yield ' x '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'model'))
        yield ', each reporting '
        yield str((undefined(name='gpu_memory_low') if l_0_gpu_memory_low is missing else l_0_gpu_memory_low))
        yield '-'
        yield str((undefined(name='gpu_memory_high') if l_0_gpu_memory_high is missing else l_0_gpu_memory_high))
        yield ' MiB\nmemory=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits) ||\n    fail gpus "nvidia-smi failed"\nfound=$(printf \'%s\\n\' "$memory" | grep -c \'[0-9]\')\n[ "$found" -eq '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'count'))
        yield ' ] || fail gpus "$found of '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'count'))
        yield ' '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'model'))
        yield ' GPUs found"\nfor mib in $memory; do\n    if ! [ "$mib" -ge '
        yield str((undefined(name='gpu_memory_low') if l_0_gpu_memory_low is missing else l_0_gpu_memory_low))
        yield ' ] 2>/dev/null || ! [ "$mib" -le '
        yield str((undefined(name='gpu_memory_high') if l_0_gpu_memory_high is missing else l_0_gpu_memory_high))
        yield ' ]; then\n        fail gpus "a GPU with $mib MiB is not a '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'model'))
        yield '"\n    fi\ndone\n'
    if ('mig' in (undefined(name='checks') if l_0_checks is missing else l_0_checks)):
        pass
        yield '\n# mig: the MIG instances the layout makes on '
        yield str(environment.getattr(environment.getattr((undefined(name='pool') if l_0_pool is missing else l_0_pool), 'gpus'), 'count'))
        yield ' GPUs\ndevices=$(nvidia-smi -L) || fail mig "nvidia-smi -L failed"\n'
        for (l_1_profile, l_1_count) in (undefined(name='mig') if l_0_mig is missing else l_0_mig):
            _loop_vars = {}
            pass
            yield 'found=$(printf \'%s\\n\' "$devices" | grep -c \'MIG '
            yield str(l_1_profile)
            yield ' \')\n[ "$found" -eq '
            yield str(l_1_count)
            yield ' ] || fail mig "$found of '
            yield str(l_1_count)
            yield ' MIG '
            yield str(l_1_profile)
            yield ' instances"\n'
        l_1_profile = l_1_count = missing
    if ('mounts' in (undefined(name='checks') if l_0_checks is missing else l_0_checks)):
        pass
        yield '\n# mounts: the file systems storage[] mounts on this pool\n'
        for l_1_storage in (undefined(name='mounts') if l_0_mounts is missing else l_0_mounts):
            _loop_vars = {}
            pass
            yield "awk -v m='"
            yield str(environment.getattr(l_1_storage, 'mount'))
            yield '\' \'$2 == m {found = 1} END {exit !found}\' /proc/mounts ||\n    fail mounts "'
            yield str(environment.getattr(l_1_storage, 'mount'))
            yield ' ('
            yield str(environment.getattr(l_1_storage, 'name'))
            yield ') is not mounted"\n'
        l_1_storage = missing
    if ('memory' in (undefined(name='checks') if l_0_checks is missing else l_0_checks)):
        pass
        yield '\n# memory: at least RealMemory='
        yield str((undefined(name='real_memory') if l_0_real_memory is missing else l_0_real_memory))
        yield ' MiB, what slurm.conf offers to jobs\nmib=$(awk \'/^MemTotal:/ {print int($2 / 1024)}\' /proc/meminfo)\n[ "$mib" -ge '
        yield str((undefined(name='real_memory') if l_0_real_memory is missing else l_0_real_memory))
        yield ' ] || fail memory "$mib MiB, below RealMemory='
        yield str((undefined(name='real_memory') if l_0_real_memory is missing else l_0_real_memory))
        yield '"\n'
    yield 'exit 0\n'

blocks = {}
debug_info = '2=27&4=35&6=37&17=39&19=42&23=50&25=56&26=60&30=62&32=65&34=67&35=71&36=73&39=80&42=83&43=87&44=89&47=94&49=97&51=99'