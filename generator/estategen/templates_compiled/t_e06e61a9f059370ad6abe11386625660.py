# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/qos.sacctmgr.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_lines = resolve('lines')
    l_0_grant = resolve('grant')
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
    for l_1_line in (undefined(name='lines') if l_0_lines is missing else l_0_lines):
        _loop_vars = {}
        pass
        yield str(l_1_line)
        yield '\n'
    l_1_line = missing
    yield str((undefined(name='grant') if l_0_grant is missing else l_0_grant))
    yield '\n'

blocks = {}
debug_info = '1=15&7=23&8=26&10=29'