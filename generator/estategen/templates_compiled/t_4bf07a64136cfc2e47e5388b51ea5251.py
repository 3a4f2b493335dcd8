# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'report/report.html.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_r = resolve('r')
    l_0_e = resolve('e')
    l_0_tables = resolve('tables')
    pass
    yield '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="generator" content="estategen '
    yield escape(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'version'))
    yield '">\n<title>Estate '
    yield escape(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'name'))
    yield ': capacity and ownership</title>\n<style>\n:root { --ink: #1d2733; --muted: #5b6775; --line: #d5dbe3; --slurm: #2f6db5; --kube: #2f8f5b;\n        --warn: #c25a00; --bg: #f6f8fa; }\n* { box-sizing: border-box; }\nbody { margin: 0; padding: 24px 32px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;\n       color: var(--ink); background: #fff; }\nh1 { margin: 0 0 4px; font-size: 24px; }\nh2 { margin: 32px 0 8px; font-size: 18px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }\n.sub { color: var(--muted); margin: 0 0 16px; }\n.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }\n.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 110px; background: var(--bg); }\n.card b { display: block; font-size: 20px; }\n.card span { color: var(--muted); font-size: 12px; }\nul.warnings { list-style: none; padding: 0; margin: 8px 0; }\nul.warnings li { border-left: 4px solid var(--warn); background: #fff6ee; padding: 6px 10px; margin: 4px 0; }\n.kind { display: inline-block; font-size: 11px; font-weight: 600; color: var(--warn); margin-right: 8px;\n        text-transform: uppercase; letter-spacing: .03em; }\n.ok { color: var(--kube); }\nfigure { margin: 8px 0; overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; padding: 4px; }\nfigcaption { color: var(--muted); font-size: 12px; padding: 4px 8px; }\ntable { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13px; }\nth, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }\nth { background: var(--bg); font-weight: 600; }\np.note { color: var(--muted); font-size: 12px; margin: 4px 0; }\nsvg text { font: 12px system-ui, -apple-system, "Segoe UI", sans-serif; fill: var(--ink); }\nsvg .frame rect { fill: none; stroke: var(--line); stroke-width: 1.5; }\nsvg .lane.slurm rect { fill: #f3f7fc; stroke: #c9d9ee; }\nsvg .lane.kubernetes rect { fill: #f3faf6; stroke: #c5e3d1; }\nsvg .lane.teams rect { fill: #fafafa; }\nsvg .cluster rect { fill: #fff; stroke: #9fcdb2; stroke-dasharray: 5 4; }\nsvg .frame-label { font-weight: 600; fill: var(--muted); }\nsvg rect.pool { fill: #fff; stroke-width: 2; }\nsvg .side-slurm rect.pool { stroke: var(--slurm); }\nsvg .side-kubernetes rect.pool { stroke: var(--kube); }\nsvg rect.pool.warn { stroke: var(--warn); stroke-dasharray: 6 3; }\nsvg rect.partition { fill: #e4eefa; stroke: var(--slurm); }\nsvg rect.queue { fill: #e2f4ea; stroke: var(--kube); }\nsvg rect.gpu-track, svg rect.share-track { fill: #e6e9ee; }\nsvg rect.gpu-bar { fill: #7a5cc7; }\nsvg rect.share-bar { fill: var(--slurm); }\nsvg rect.team-row { fill: #fff; stroke: var(--line); }\nsvg text.name { font-weight: 700; font-size: 13px; }\nsvg text.slots { fill: #6a4fb3; }\nsvg text.slurm-line { fill: var(--slurm); }\nsvg text.kube-line { fill: var(--kube); }\nsvg text.warn-mark { fill: var(--warn); font-weight: 700; }\nsvg path.link { fill: none; stroke: #8c99a8; stroke-width: 1.5; opacity: .7; }\nsvg .item { cursor: default; outline: none; }\nsvg.focus .item, svg.focus path.link { opacity: .25; }\nsvg.focus .hl, svg.focus path.link.hl { opacity: 1; }\nsvg.focus path.link.hl { stroke: var(--ink); stroke-width: 2.5; }\n</style>\n</head>\n<body>\n<header>\n<h1>Estate '
    yield escape(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'name'))
    yield '</h1>\n<p class="sub">'
    if environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'description'):
        pass
        yield escape(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'description'))
        yield ' · '
    yield 'Slurm '
    yield escape(environment.getattr(environment.getattr(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'versions'), 'slurm'), 'text'))
    yield ' · Kubernetes '
    yield escape(environment.getattr(environment.getattr(environment.getattr((undefined(name='e') if l_0_e is missing else l_0_e), 'versions'), 'kubernetes'), 'text'))
    yield ' · report by estategen '
    yield escape(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'version'))
    yield '</p>\n<div class="cards">\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'pools'))
    yield '</b><span>pools</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'nodes'))
    yield '</b><span>nodes (autoscaled at max)</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'slurm_gpus'))
    yield '</b><span>Slurm GPUs</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'kubernetes_gpus'))
    yield '</b><span>Kubernetes GPUs</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'partitions'))
    yield '</b><span>partitions</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'queues'))
    yield '</b><span>team queues</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'teams'))
    yield '</b><span>teams</span></div>\n<div class="card"><b>'
    yield escape(environment.getattr(environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'totals'), 'users'))
    yield '</b><span>users</span></div>\n</div>\n</header>\n<main>\n<section id="warnings">\n<h2>Warnings</h2>\n'
    if environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'warnings'):
        pass
        yield '<ul class="warnings">\n'
        for l_1_w in environment.getattr((undefined(name='r') if l_0_r is missing else l_0_r), 'warnings'):
            l_1_kinds = resolve('kinds')
            _loop_vars = {}
            pass
            yield '<li data-kind="'
            yield escape(environment.getattr(l_1_w, 'kind'))
            yield '"><span class="kind" title="'
            yield escape(environment.getitem((undefined(name='kinds') if l_1_kinds is missing else l_1_kinds), environment.getattr(l_1_w, 'kind')))
            yield '">'
            yield escape(environment.getattr(l_1_w, 'kind'))
            yield '</span>'
            yield escape(environment.getattr(l_1_w, 'message'))
            yield '</li>\n'
        l_1_w = l_1_kinds = missing
        yield '</ul>\n'
    else:
        pass
        yield '<p class="ok">No warnings: every pool is drawn on, cohorts fit their clusters, every team reaches both sides, and pools have their metrics and file systems.</p>\n'
    yield '</section>\n<section id="picture">\n<h2>The estate at a glance</h2>\n<figure>\n'
    template = environment.get_template('report/picture.svg.html.j2', 'report/report.html.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    yield "<figcaption>Boxes with a solid border are pools (the bar is their share of the largest pool's GPUs; ⚠ marks warnings). Partitions draw on Slurm pools from above, team queues on Kubernetes pools from below. Hover or focus any box to see what it is connected to; hover shows details.</figcaption>\n</figure>\n</section>\n"
    for l_1_t in (undefined(name='tables') if l_0_tables is missing else l_0_tables):
        _loop_vars = {}
        pass
        yield '<section id="'
        yield escape(environment.getattr(l_1_t, 'id'))
        yield '">\n<h2>'
        yield escape(environment.getattr(l_1_t, 'title'))
        yield '</h2>\n<table>\n<thead><tr>'
        for l_2_c in environment.getattr(l_1_t, 'columns'):
            _loop_vars = {}
            pass
            yield '<th>'
            yield escape(l_2_c)
            yield '</th>'
        l_2_c = missing
        yield '</tr></thead>\n<tbody>\n'
        for l_2_row in environment.getattr(l_1_t, 'rows'):
            _loop_vars = {}
            pass
            yield '<tr>'
            for l_3_cell in l_2_row:
                _loop_vars = {}
                pass
                yield '<td>'
                yield escape(l_3_cell)
                yield '</td>'
            l_3_cell = missing
            yield '</tr>\n'
        l_2_row = missing
        yield '</tbody>\n</table>\n'
        if environment.getattr(l_1_t, 'note'):
            pass
            yield '<p class="note">'
            yield escape(environment.getattr(l_1_t, 'note'))
            yield '</p>'
        yield '</section>\n'
    l_1_t = missing
    yield '</main>\n<script>\n(function () {\n  "use strict";\n  var svg = document.getElementById("estate");\n  var items = svg.querySelectorAll("[data-key]");\n  function show(element) {\n    var related = (element.getAttribute("data-links") || "").split(" ");\n    related.push(element.getAttribute("data-key"));\n    items.forEach(function (other) {\n      var key = other.getAttribute("data-key");\n      var ends = (other.getAttribute("data-links") || "").split(" ");\n      var isLink = other.tagName.toLowerCase() === "path";\n      var lit = isLink\n        ? ends.indexOf(element.getAttribute("data-key")) >= 0 && related.indexOf(ends[0]) >= 0 && related.indexOf(ends[1]) >= 0\n        : related.indexOf(key) >= 0;\n      other.classList.toggle("hl", lit);\n    });\n    svg.classList.add("focus");\n  }\n  function clear() {\n    svg.classList.remove("focus");\n    items.forEach(function (other) { other.classList.remove("hl"); });\n  }\n  svg.querySelectorAll("g.item").forEach(function (element) {\n    element.addEventListener("mouseenter", function () { show(element); });\n    element.addEventListener("focus", function () { show(element); });\n    element.addEventListener("mouseleave", clear);\n    element.addEventListener("blur", clear);\n  });\n  document.documentElement.setAttribute("data-ready", String(svg.querySelectorAll("rect.pool").length));\n})();\n</script>\n</body>\n</html>\n'

blocks = {}
debug_info = '6=15&7=17&63=19&64=21&66=32&67=34&68=36&69=38&70=40&71=42&72=44&73=46&79=48&81=51&82=56&92=70&96=77&97=81&98=83&100=85&102=93&103=97&107=107'