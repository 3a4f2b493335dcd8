# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'report/report.md.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_e = resolve('e')
    l_0_r = resolve('r')
    l_0_tables = resolve('tables')
    try:
        t_1 = environment.filters['md']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'md' found.")
    pass
    yield '# Estate '
    yield str(t_1(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'name')))
    yield ': capacity and ownership\n\n'
    if environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'description'):
        pass
        yield '**Description:** '
        yield str(t_1(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'description')))
        yield '\n\n'
    yield 'Slurm '
    yield str(t_1(environment.getattr(environment.getattr(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'versions'), 'slurm'), 'text')))
    yield ' · Kubernetes '
    yield str(t_1(environment.getattr(environment.getattr(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'versions'), 'kubernetes'), 'text')))
    yield ' · report by estategen '
    yield str(t_1(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'version')))
    yield '\n\n| pools | nodes | Slurm GPUs | Kubernetes GPUs | partitions | team queues | teams | users |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n| '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'pools'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'nodes'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'slurm_gpus'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'kubernetes_gpus'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'partitions'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'queues'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'teams'))
    yield ' | '
    yield str(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'users'))
    yield ' |\n\n## Warnings\n\n'
    t_2 = 1
    for l_1_w in environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'warnings'):
        _loop_vars = {}
        pass
        yield '- **'
        yield str(t_1(environment.getattr(l_1_w, 'kind')))
        yield '**: '
        yield str(t_1(environment.getattr(l_1_w, 'message')))
        yield '\n'
        t_2 = 0
    l_1_w = missing
    if t_2:
        pass
        yield 'No warnings: every pool is drawn on, cohorts fit their clusters, every team reaches both sides, and pools have their metrics and file systems.\n'
    yield "\nThe picture of the estate (pools per scheduler, the partitions and queues that draw on them, and each team's share) is in report.html.\n"
    for l_1_t in (undefined(name='tables') if l_0_tables is missing else l_0_tables):
        _loop_vars = {}
        pass
        yield '\n## '
        yield str(t_1(environment.getattr(l_1_t, 'title')))
        yield '\n\n|'
        for l_2_c in environment.getattr(l_1_t, 'columns'):
            _loop_vars = {}
            pass
            yield ' '
            yield str(t_1(l_2_c))
            yield ' |'
        l_2_c = missing
        yield '\n|'
        for l_2_c in environment.getattr(l_1_t, 'columns'):
            _loop_vars = {}
            pass
            yield '---|'
        l_2_c = missing
        yield '\n'
        for l_2_row in environment.getattr(l_1_t, 'rows'):
            _loop_vars = {}
            pass
            yield '|'
            for l_3_cell in l_2_row:
                _loop_vars = {}
                pass
                yield ' '
                yield str(t_1(l_3_cell))
                yield ' |'
            l_3_cell = missing
            yield '\n'
        l_2_row = missing
        if environment.getattr(l_1_t, 'note'):
            pass
            yield '\n'
            yield str(t_1(environment.getattr(l_1_t, 'note')))
            yield '\n'
    l_1_t = missing

blocks = {}
debug_info = '1=21&3=23&4=26&7=29&11=35&15=52&16=56&22=66&24=70&26=72&28=80&30=86&31=90&34=99&36=102'