# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/gres.conf.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_pools = resolve('pools')
    pass
    l_1_file = 'gres.conf'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/gres.conf.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    for l_1_pool in (undefined(name='pools') if l_0_pools is missing else l_0_pools):
        _loop_vars = {}
        pass
        yield '\n# pool '
        yield str(environment.getattr(l_1_pool, 'pool'))
        yield '\n'
        if environment.getattr(l_1_pool, 'mig'):
            pass
            yield '# MIG instances are found by NVML; each Type below matches the detected MIG profile.\nNodeName='
            yield str(environment.getattr(l_1_pool, 'hosts'))
            yield ' AutoDetect=nvml\n'
            for (l_2_kind, l_2_count) in environment.getattr(l_1_pool, 'gpus'):
                _loop_vars = {}
                pass
                yield 'NodeName='
                yield str(environment.getattr(l_1_pool, 'hosts'))
                yield ' Name=gpu Type='
                yield str(l_2_kind)
                yield ' Count='
                yield str(l_2_count)
                yield '\n'
            l_2_kind = l_2_count = missing
        elif environment.getattr(l_1_pool, 'nvml'):
            pass
            yield "# The GPUs are found by NVML (gpus.autodetect: nvml); slurmd needs Slurm's gpu_nvml plugin.\nNodeName="
            yield str(environment.getattr(l_1_pool, 'hosts'))
            yield ' AutoDetect=nvml\n'
            for (l_2_kind, l_2_count) in environment.getattr(l_1_pool, 'gpus'):
                _loop_vars = {}
                pass
                yield 'NodeName='
                yield str(environment.getattr(l_1_pool, 'hosts'))
                yield ' Name=gpu'
                if l_2_kind:
                    pass
                    yield ' Type='
                    yield str(l_2_kind)
                yield ' Count='
                yield str(l_2_count)
                yield '\n'
            l_2_kind = l_2_count = missing
        else:
            pass
            for (l_2_kind, l_2_count) in environment.getattr(l_1_pool, 'gpus'):
                _loop_vars = {}
                pass
                yield 'NodeName='
                yield str(environment.getattr(l_1_pool, 'hosts'))
                yield ' AutoDetect=off Name=gpu'
                if l_2_kind:
                    pass
                    yield ' Type='
                    yield str(l_2_kind)
                yield ' File='
                yield str(environment.getattr(l_1_pool, 'files'))
                yield '\n'
            l_2_kind = l_2_count = missing
        if environment.getattr(l_1_pool, 'shards'):
            pass
            yield 'NodeName='
            yield str(environment.getattr(l_1_pool, 'hosts'))
            yield ' Name=shard Count='
            yield str(environment.getattr(l_1_pool, 'shards'))
            yield '\n'
    l_1_pool = missing

blocks = {}
debug_info = '1=14&2=21&4=25&5=27&7=30&8=32&9=36&11=43&13=46&14=48&15=52&18=64&19=68&22=78&23=81'