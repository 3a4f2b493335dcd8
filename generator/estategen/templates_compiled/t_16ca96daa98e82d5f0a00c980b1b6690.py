# Written by `python -m estategen.templating` with Jinja 3.1.6 from estategen/templates; do not edit.
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'ansible/site.yml.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_estate = resolve('estate')
    l_0_has_slurm = resolve('has_slurm')
    l_0_has_rest_api = resolve('has_rest_api')
    l_0_has_accounting = resolve('has_accounting')
    l_0_has_gpus = resolve('has_gpus')
    l_0_has_k8s = resolve('has_k8s')
    pass
    yield '---\n# Builds the machines of estate '
    yield str(environment.getattr((undefined(name='estate') if l_0_estate is missing else l_0_estate), 'name'))
    yield ". Rendered by estategen; from this folder,\n# install the collections once (`ansible-galaxy collection install -r requirements.yml`), then\n# run `ansible-playbook site.yml --ask-vault-pass` (secrets: see README of each role).\n- name: Base system, identity and time on every host\n  hosts: all\n  become: true\n  # the users and teams: only this play's role reads them, so they stay out of the inventory\n  vars_files:\n    - vars/identity.yml\n  roles:\n    - role: common\n      tags: [common]\n"
    if (undefined(name='has_slurm') if l_0_has_slurm is missing else l_0_has_slurm):
        pass
        yield '\n- name: MUNGE authentication for Slurm\n  hosts: slurm_controller:slurmdbd:slurm_compute'
        yield str((':slurmrestd' if (undefined(name='has_rest_api') if l_0_has_rest_api is missing else l_0_has_rest_api) else ''))
        yield '\n  become: true\n  roles:\n    - role: munge\n      tags: [munge]\n'
    if (undefined(name='has_accounting') if l_0_has_accounting is missing else l_0_has_accounting):
        pass
        yield '\n- name: Slurm accounting daemon\n  hosts: slurmdbd\n  become: true\n  roles:\n    - role: slurmdbd\n      tags: [slurmdbd]\n'
    if (undefined(name='has_slurm') if l_0_has_slurm is missing else l_0_has_slurm):
        pass
        yield '\n- name: Slurm controllers\n  hosts: slurm_controller\n  become: true\n  roles:\n    - role: slurm_controller\n      tags: [slurm_controller]\n'
    if (undefined(name='has_rest_api') if l_0_has_rest_api is missing else l_0_has_rest_api):
        pass
        yield '\n- name: Slurm REST API\n  hosts: slurmrestd\n  become: true\n  roles:\n    - role: slurmrestd\n      tags: [slurmrestd]\n'
    if (undefined(name='has_gpus') if l_0_has_gpus is missing else l_0_has_gpus):
        pass
        yield '\n- name: NVIDIA driver, persistence, fabric manager and MIG layout\n  hosts: gpu_nodes\n  become: true\n  roles:\n    - role: nvidia_gpu\n      tags: [nvidia_gpu]\n'
    if (undefined(name='has_slurm') if l_0_has_slurm is missing else l_0_has_slurm):
        pass
        yield '\n- name: Slurm compute nodes\n  hosts: slurm_compute\n  become: true\n  roles:\n    - role: slurm_compute\n      tags: [slurm_compute]\n'
    if (undefined(name='has_k8s') if l_0_has_k8s is missing else l_0_has_k8s):
        pass
        yield '\n- name: Kubernetes GPU nodes\n  hosts: k8s_gpu_nodes\n  become: true\n  roles:\n    - role: k8s_gpu_node\n      tags: [k8s_gpu_node]\n'
    yield '\n- name: Shared file systems\n  hosts: all\n  become: true\n  roles:\n    - role: storage_client\n      tags: [storage_client]\n\n- name: Metrics exporters\n  hosts: all\n  become: true\n  roles:\n    - role: node_exporter\n      tags: [node_exporter]\n'
    if (undefined(name='has_gpus') if l_0_has_gpus is missing else l_0_has_gpus):
        pass
        yield "    # Kubernetes GPU nodes get the DCGM exporter as a DaemonSet from the cluster's stack.\n    - role: dcgm_exporter\n      tags: [dcgm_exporter]\n      when: pool_gpu is defined and pool_gpu is mapping and pool_scheduler == 'slurm'\n"
    if (undefined(name='has_slurm') if l_0_has_slurm is missing else l_0_has_slurm):
        pass
        yield '\n# After the node exporter: its package creates the user this exporter runs as. The role\n# installs the exporter on the primary controller only.\n- name: Slurm exporter\n  hosts: slurm_controller\n  become: true\n  roles:\n    - role: slurm_exporter\n      tags: [slurm_exporter]\n'

blocks = {}
debug_info = '2=18&14=20&17=23&23=25&32=28&41=31&50=34&59=37&68=40&91=44&97=47'