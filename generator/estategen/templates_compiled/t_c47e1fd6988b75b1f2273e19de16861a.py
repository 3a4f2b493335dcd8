# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/reservations.scontrol.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_prefix = resolve('prefix')
    l_0_reservations = resolve('reservations')
    pass
    l_1_file = 'reservations.scontrol'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/reservations.scontrol.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield "# Reservations live in slurmctld's state, not in slurm.conf. One `scontrol create reservation`\n# per line; the slurm_controller role applies them idempotently: it creates those that are\n# absent, updates those that differ, and deletes reservations named "
    yield str((undefined(name='prefix') if l_0_prefix is missing else l_0_prefix))
    yield "* that this\n# file no longer lists (no other reservation is touched). Times are the controllers' local time.\n"
    l_1_loop = missing
    for l_1_r, l_1_loop in LoopContext((undefined(name='reservations') if l_0_reservations is missing else l_0_reservations), undefined):
        _loop_vars = {}
        pass
        yield 'create reservation '
        l_2_loop = missing
        for (l_2_key, l_2_value), l_2_loop in LoopContext(l_1_r, undefined):
            _loop_vars = {}
            pass
            yield str(l_2_key)
            yield '='
            yield str(l_2_value)
            if (not environment.getattr(l_2_loop, 'last')):
                pass
                yield ' '
        l_2_loop = l_2_key = l_2_value = missing
        yield '\n'
    l_1_loop = l_1_r = missing

blocks = {}
debug_info = '1=15&4=23&6=26&7=31'