# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/sacct.cfg.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_cluster = resolve('cluster')
    l_0_parent = resolve('parent')
    l_0_estate = resolve('estate')
    l_0_teams = resolve('teams')
    pass
    l_1_file = 'sacct.cfg'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/sacct.cfg.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield "# Load with `sacctmgr -i load file=sacct.cfg` once slurmdbd runs; QoS come from qos.sacctmgr.\nCluster - '"
    yield str((undefined(name='cluster') if l_0_cluster is missing else l_0_cluster))
    yield "':Fairshare=1\nParent - 'root'\nAccount - '"
    yield str((undefined(name='parent') if l_0_parent is missing else l_0_parent))
    yield "':Description='estate "
    yield str(environment.getattr((undefined(name='estate') if l_0_estate is missing else l_0_estate), 'name'))
    yield "':Organization='"
    yield str(environment.getattr((undefined(name='estate') if l_0_estate is missing else l_0_estate), 'name'))
    yield "':Fairshare=1\nParent - '"
    yield str((undefined(name='parent') if l_0_parent is missing else l_0_parent))
    yield "'\n"
    for l_1_team in (undefined(name='teams') if l_0_teams is missing else l_0_teams):
        _loop_vars = {}
        pass
        yield "Account - '"
        yield str(environment.getattr(l_1_team, 'name'))
        yield "':Description='team "
        yield str(environment.getattr(l_1_team, 'name'))
        yield "':Organization='"
        yield str(environment.getattr((undefined(name='estate') if l_0_estate is missing else l_0_estate), 'name'))
        yield "':Fairshare="
        yield str(environment.getattr(l_1_team, 'fairshare'))
        yield '\n'
    l_1_team = missing
    def t_1(fiter):
        for l_1_team in fiter:
            if environment.getattr(l_1_team, 'members'):
                yield l_1_team
    for l_1_team in t_1((undefined(name='teams') if l_0_teams is missing else l_0_teams)):
        _loop_vars = {}
        pass
        yield "Parent - '"
        yield str(environment.getattr(l_1_team, 'name'))
        yield "'\n"
        for l_2_user in environment.getattr(l_1_team, 'members'):
            l_2_default_account = resolve('default_account')
            _loop_vars = {}
            pass
            yield "User - '"
            yield str(l_2_user)
            yield "':DefaultAccount='"
            yield str(environment.getitem((undefined(name='default_account') if l_2_default_account is missing else l_2_default_account), l_2_user))
            yield "':Fairshare=1\n"
        l_2_user = l_2_default_account = missing
    l_1_team = missing

blocks = {}
debug_info = '1=17&3=25&5=27&6=33&7=35&8=39&10=48&11=56&12=58&13=63'