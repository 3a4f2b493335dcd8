# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'ansible/ansible.cfg.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    pass
    yield '# Rendered by estategen. Run from this folder: ansible-playbook site.yml\n[defaults]\ninventory = inventory.yml\nroles_path = roles\ninterpreter_python = auto_silent\nforks = 25\ngathering = smart\nfact_caching = memory\n\n[ssh_connection]\npipelining = True\n'

blocks = {}
debug_info = ''