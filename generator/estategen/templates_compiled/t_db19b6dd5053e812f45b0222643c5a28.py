# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/_header.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_file = resolve('file')
    l_0_slurm_version = resolve('slurm_version')
    l_0_estate = resolve('estate')
    l_0_version = resolve('version')
    pass
    yield '# '
    yield str((undefined(name='file') if l_0_file is missing else l_0_file))
    yield ' for Slurm '
    yield str((undefined(name='slurm_version') if l_0_slurm_version is missing else l_0_slurm_version))
    yield ', estate '
    yield str(environment.getattr((undefined(name='estate') if l_0_estate is missing else l_0_estate), 'name'))
    yield '.\n# Rendered by estategen '
    yield str((undefined(name='version') if l_0_version is missing else l_0_version))
    yield '; edit the blueprint and render again, not this file.\n'

blocks = {}
debug_info = '1=16&2=22'