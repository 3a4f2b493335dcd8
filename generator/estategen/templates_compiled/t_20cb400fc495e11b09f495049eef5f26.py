# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'report/picture.svg.html.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_p = resolve('p')
    l_0_e = resolve('e')
    l_0_r = resolve('r')
    try:
        t_1 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    yield '<svg xmlns="http://www.w3.org/2000/svg" id="estate" role="img" width="'
    yield escape(('%.0f' % environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'width')))
    yield '" height="'
    yield escape(('%.0f' % environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'height')))
    yield '" viewBox="0 0 '
    yield escape(('%.0f' % environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'width')))
    yield ' '
    yield escape(('%.0f' % environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'height')))
    yield '" aria-labelledby="estate-title">\n<title id="estate-title">Estate '
    yield escape(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'name'))
    yield ': '
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'pools'))
    yield ' pools, '
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'slurm_gpus'))
    yield ' Slurm GPUs, '
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'kubernetes_gpus'))
    yield ' Kubernetes GPUs</title>\n'
    for l_1_f in environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'frames'):
        _loop_vars = {}
        pass
        yield '<g class="frame '
        yield escape(environment.getattr(l_1_f, 'cls'))
        yield '">\n<rect x="'
        yield escape(('%.1f' % environment.getattr(l_1_f, 'x')))
        yield '" y="'
        yield escape(('%.1f' % environment.getattr(l_1_f, 'y')))
        yield '" width="'
        yield escape(('%.1f' % environment.getattr(l_1_f, 'w')))
        yield '" height="'
        yield escape(('%.1f' % environment.getattr(l_1_f, 'h')))
        yield '" rx="10"/>\n<text class="frame-label" x="'
        yield escape(('%.1f' % (environment.getattr(l_1_f, 'x') + 12)))
        yield '" y="'
        yield escape(('%.1f' % (environment.getattr(l_1_f, 'y') + 22)))
        yield '">'
        yield escape(environment.getattr(l_1_f, 'label'))
        yield '</text>\n</g>\n'
    l_1_f = missing
    for l_1_l in environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'links'):
        _loop_vars = {}
        pass
        yield '<path class="link" data-key="'
        yield escape(environment.getattr(l_1_l, 'a'))
        yield '|'
        yield escape(environment.getattr(l_1_l, 'b'))
        yield '" data-links="'
        yield escape(environment.getattr(l_1_l, 'a'))
        yield ' '
        yield escape(environment.getattr(l_1_l, 'b'))
        yield '" d="'
        yield escape(environment.getattr(l_1_l, 'path'))
        yield '"/>\n'
    l_1_l = missing
    l_1_loop = missing
    for l_1_b, l_1_loop in LoopContext(environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'boxes'), undefined):
        _loop_vars = {}
        pass
        yield '<g class="item item-'
        yield escape(environment.getattr(l_1_b, 'kind'))
        yield ' side-'
        yield escape(environment.getattr(l_1_b, 'side'))
        yield escape((' has-warning' if environment.getattr(l_1_b, 'warn') else cond_expr_undefined("the inline if-expression on line 13 in 'report/picture.svg.html.j2' evaluated to false and no else section was defined.")))
        yield '" data-key="'
        yield escape(environment.getattr(l_1_b, 'key'))
        yield '" data-links="'
        yield escape(environment.getattr(l_1_b, 'links'))
        yield '" transform="translate('
        yield escape(('%.1f' % environment.getattr(l_1_b, 'x')))
        yield ','
        yield escape(('%.1f' % environment.getattr(l_1_b, 'y')))
        yield ')" tabindex="0">\n<title>'
        yield escape(environment.getattr(l_1_b, 'title'))
        yield '</title>\n'
        if (environment.getattr(l_1_b, 'kind') == 'pool'):
            pass
            yield '<rect class="pool'
            yield escape((' warn' if environment.getattr(l_1_b, 'warn') else cond_expr_undefined("the inline if-expression on line 16 in 'report/picture.svg.html.j2' evaluated to false and no else section was defined.")))
            yield '" data-pool="'
            yield escape(environment.getattr(l_1_b, 'name'))
            yield '" width="'
            yield escape(environment.getattr(l_1_b, 'w'))
            yield '" height="'
            yield escape(environment.getattr(l_1_b, 'h'))
            yield '" rx="7"/>\n<rect class="gpu-track" x="10" y="'
            yield escape((environment.getattr(l_1_b, 'h') - 12))
            yield '" width="'
            yield escape((environment.getattr(l_1_b, 'w') - 20))
            yield '" height="5" rx="2"/>\n<rect class="gpu-bar" x="10" y="'
            yield escape((environment.getattr(l_1_b, 'h') - 12))
            yield '" width="'
            yield escape(('%.1f' % ((environment.getattr(l_1_b, 'w') - 20) * environment.getattr(l_1_b, 'bar'))))
            yield '" height="5" rx="2"/>\n'
        else:
            pass
            yield '<rect class="'
            yield escape(environment.getattr(l_1_b, 'kind'))
            yield '" width="'
            yield escape(environment.getattr(l_1_b, 'w'))
            yield '" height="'
            yield escape(environment.getattr(l_1_b, 'h'))
            yield '" rx="7"/>\n'
        l_2_loop = missing
        for (l_2_cls, l_2_line), l_2_loop in LoopContext(environment.getattr(l_1_b, 'lines'), undefined):
            _loop_vars = {}
            pass
            yield '<text class="'
            yield escape(l_2_cls)
            yield '" x="10" y="'
            yield escape((18 + (environment.getattr(l_2_loop, 'index0') * 16)))
            yield '">'
            yield escape(l_2_line)
            yield '</text>\n'
        l_2_loop = l_2_cls = l_2_line = missing
        if environment.getattr(l_1_b, 'warn'):
            pass
            yield '<text class="warn-mark" x="'
            yield escape((environment.getattr(l_1_b, 'w') - 10))
            yield '" y="18" text-anchor="end">⚠ '
            yield escape(environment.getattr(l_1_b, 'warn'))
            yield '</text>\n'
        yield '</g>\n'
    l_1_loop = l_1_b = missing
    l_1_loop = missing
    for l_1_t, l_1_loop in LoopContext(environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'teams'), undefined):
        _loop_vars = {}
        pass
        yield '<g class="item item-team" data-key="'
        yield escape(environment.getattr(l_1_t, 'key'))
        yield '" data-links="'
        yield escape(environment.getattr(l_1_t, 'links'))
        yield '" tabindex="0">\n<rect class="team-row" x="16" y="'
        yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') - 2)))
        yield '" width="'
        yield escape(('%.1f' % (environment.getattr((undefined(name='p') if l_0_p is missing else l_0_p), 'width') - 32)))
        yield '" height="36" rx="4"/>\n'
        l_2_loop = missing
        for (l_2_x, l_2_text), l_2_loop in LoopContext(environment.getattr(l_1_t, 'cells'), undefined):
            _loop_vars = {}
            pass
            yield '<text class="'
            yield escape(('name' if environment.getattr(l_2_loop, 'first') else 'line'))
            yield '" x="'
            yield escape(('%.1f' % l_2_x))
            yield '" y="'
            yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 13)))
            yield '">'
            yield escape(l_2_text)
            yield '</text>\n'
        l_2_loop = l_2_x = l_2_text = missing
        if (not t_1(environment.getattr(l_1_t, 'share'))):
            pass
            yield '<rect class="share-track" x="'
            yield escape(('%.1f' % environment.getattr(l_1_t, 'share_x')))
            yield '" y="'
            yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 4)))
            yield '" width="120" height="9" rx="2"/>\n<rect class="share-bar" x="'
            yield escape(('%.1f' % environment.getattr(l_1_t, 'share_x')))
            yield '" y="'
            yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 4)))
            yield '" width="'
            yield escape(('%.1f' % (120 * environment.getattr(l_1_t, 'share'))))
            yield '" height="9" rx="2"/>\n<text class="line" x="'
            yield escape(('%.1f' % (environment.getattr(l_1_t, 'share_x') + 128)))
            yield '" y="'
            yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 13)))
            yield '">Fairshare '
            yield escape(('%.0f' % (100 * environment.getattr(l_1_t, 'share'))))
            yield '%</text>\n'
        else:
            pass
            yield '<text class="line" x="'
            yield escape(('%.1f' % environment.getattr(l_1_t, 'share_x')))
            yield '" y="'
            yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 13)))
            yield '">Fairshare not enforced</text>\n'
        yield '<text class="slurm-line" x="'
        yield escape(('%.1f' % (environment.getitem(environment.getitem(environment.getattr(l_1_t, 'cells'), 0), 0) + 12)))
        yield '" y="'
        yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 29)))
        yield '">'
        yield escape(environment.getattr(l_1_t, 'slurm'))
        yield '</text>\n<text class="kube-line" x="'
        yield escape(('%.1f' % (environment.getitem(environment.getitem(environment.getattr(l_1_t, 'cells'), 0), 0) + 380)))
        yield '" y="'
        yield escape(('%.1f' % (environment.getattr(l_1_t, 'y') + 29)))
        yield '">'
        yield escape(environment.getattr(l_1_t, 'kube'))
        yield '</text>\n</g>\n'
    l_1_loop = l_1_t = missing
    yield '</svg>\n'

blocks = {}
debug_info = '1=21&2=29&3=37&4=41&5=43&6=51&9=58&10=62&12=74&13=78&14=91&15=93&16=96&17=104&18=108&20=115&22=122&23=126&25=133&26=136&30=143&31=147&32=151&33=156&34=160&36=169&37=172&38=176&39=182&41=191&43=196&44=202'