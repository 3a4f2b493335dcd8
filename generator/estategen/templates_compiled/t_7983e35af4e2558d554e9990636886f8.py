# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/cgroup.conf.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    pass
    l_1_file = 'cgroup.conf'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/cgroup.conf.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '\nCgroupPlugin=autodetect\nConstrainCores=yes\nConstrainRAMSpace=yes\nConstrainSwapSpace=yes\nConstrainDevices=yes\n'

blocks = {}
debug_info = '1=13'