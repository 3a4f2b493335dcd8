# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/topology.conf.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_kind = resolve('kind')
    l_0_groups = resolve('groups')
    l_0_spine = resolve('spine')
    l_0_leaves = resolve('leaves')
    l_0_block_sizes = resolve('block_sizes')
    l_0_block_size = resolve('block_size')
    pass
    l_1_file = 'topology.conf'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/topology.conf.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    if ((undefined(name='kind') if l_0_kind is missing else l_0_kind) == 'tree'):
        pass
        yield "# topology/tree: leaf switches from the pools' network.switch, one spine above them.\n"
        for (l_1_name, l_1_nodes) in (undefined(name='groups') if l_0_groups is missing else l_0_groups):
            _loop_vars = {}
            pass
            yield 'SwitchName='
            yield str(l_1_name)
            yield ' Nodes='
            yield str(l_1_nodes)
            yield '\n'
        l_1_name = l_1_nodes = missing
        yield 'SwitchName='
        yield str((undefined(name='spine') if l_0_spine is missing else l_0_spine))
        yield ' Switches='
        yield str((undefined(name='leaves') if l_0_leaves is missing else l_0_leaves))
        yield '\n'
    else:
        pass
        yield "# topology/block: NVLink domains from the pools' network.block.\n"
        for (l_1_name, l_1_nodes) in (undefined(name='groups') if l_0_groups is missing else l_0_groups):
            _loop_vars = {}
            pass
            yield 'BlockName='
            yield str(l_1_name)
            yield ' Nodes='
            yield str(l_1_nodes)
            yield '\n'
        l_1_name = l_1_nodes = missing
        if (undefined(name='block_sizes') if l_0_block_sizes is missing else l_0_block_sizes):
            pass
            yield 'BlockSizes='
            yield str((undefined(name='block_size') if l_0_block_size is missing else l_0_block_size))
            yield '\n'

blocks = {}
debug_info = '1=19&2=26&4=29&5=33&7=39&10=46&11=50&13=55&14=58'