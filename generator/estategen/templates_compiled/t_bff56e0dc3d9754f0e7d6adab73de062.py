# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'slurm/slurmdbd.conf.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_accounting = resolve('accounting')
    l_0_auth_alt = resolve('auth_alt')
    l_0_slurm_user = resolve('slurm_user')
    pass
    l_1_file = 'slurmdbd.conf'
    pass
    template = environment.get_template('slurm/_header.j2', 'slurm/slurmdbd.conf.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {'file': l_1_file}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    l_1_file = missing
    yield '# Mode 0600. StoragePass is resolved at deploy time from the secret\n# `'
    yield str(environment.getattr(environment.getattr(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'database'), 'password'), 'name'))
    yield '` (Ansible Vault); it is never in this file.\n\nAuthType=auth/munge\n'
    for (l_1_key, l_1_value) in (undefined(name='auth_alt') if l_0_auth_alt is missing else l_0_auth_alt):
        _loop_vars = {}
        pass
        yield str(l_1_key)
        yield '='
        yield str(l_1_value)
        yield '\n'
    l_1_key = l_1_value = missing
    yield 'DbdHost='
    yield str(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'host'))
    yield '\nDbdPort='
    yield str(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'port'))
    yield '\nSlurmUser='
    yield str((undefined(name='slurm_user') if l_0_slurm_user is missing else l_0_slurm_user))
    yield '\nLogFile=/var/log/slurm/slurmdbd.log\nPidFile=/run/slurmdbd.pid\nStorageType=accounting_storage/mysql\nStorageHost='
    yield str(environment.getattr(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'database'), 'host'))
    yield '\nStoragePort='
    yield str(environment.getattr(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'database'), 'port'))
    yield '\nStorageLoc='
    yield str(environment.getattr(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'database'), 'name'))
    yield '\nStorageUser='
    yield str(environment.getattr(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'database'), 'user'))
    yield '\nStoragePass='
    yield str(str_join(('{{ ', environment.getattr(environment.getattr(environment.getattr((undefined(name='accounting') if l_0_accounting is missing else l_0_accounting), 'database'), 'password'), 'name'), ' }}', )))
    yield '\n'

blocks = {}
debug_info = '1=16&3=24&6=26&7=29&9=35&10=37&11=39&15=41&16=43&17=45&18=47&19=49'