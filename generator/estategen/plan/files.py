"""The changes of the files no model decides, by their path: the Ansible roles and
playbook, the Pulumi program and its stack settings, the Prometheus and Grafana files, the
health-check and power programs, estate.json (:func:`explain`, over :data:`_EXPLAINERS`);
and the Ansible roles that install each rendered Slurm file (:func:`ansible_for`). A file's
text is never read.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from estategen.facts import pool_group
from estategen.plan.steps import Action, Change

# Ansible roles that install each rendered file
_FILE_ROLES = {
    "slurm.conf": ("slurm_controller", "slurm_compute", "slurmdbd"),
    "gres.conf": ("slurm_controller", "slurm_compute"),
    "topology.conf": ("slurm_controller", "slurm_compute"),
    "cgroup.conf": ("slurm_controller", "slurm_compute"),
    "slurmdbd.conf": ("slurmdbd",),
    "sacct.cfg": ("slurmdbd",),
    "qos.sacctmgr": ("slurmdbd", "slurm_controller"),
    "reservations.scontrol": ("slurm_controller",),
}


def ansible_for(path: str) -> tuple[Action, ...]:
    """Installing a rendered Slurm file: the Ansible roles that copy it."""
    program = re.search(r"(?:^|/)(healthcheck|power)/([^/]+)\.sh$", path)
    if program and program[1] == "healthcheck":
        # a pool's health-check program goes to that pool's nodes
        return (Action("ansible-playbook", f"{pool_group(program[2])}:slurm_compute"),)
    if program:
        # elastic cloud nodes: the power programs run on the controllers
        return (Action("ansible-playbook", "all:slurm_controller"),)
    name = path.rsplit("/", 1)[-1]
    return tuple(Action("ansible-playbook", f"all:{role}") for role in _FILE_ROLES.get(name, ()))


def explain(path: str, status: str) -> list[Change]:
    """The change of one file that no model decides (the render's own files: roles, the
    Pulumi program, the Prometheus and Grafana files, the programs Ansible installs); every
    changed file yields at least one. Its text is never read."""
    if status == "mode":
        return [
            Change(
                path,
                "file-mode",
                path,
                "file mode changes; the role installs it",
                actions=ansible_for(path),
            )
        ]
    for pattern, explainer in _EXPLAINERS:
        match = re.fullmatch(pattern, path)
        if match:
            return explainer(path, status, *match.groups())
    return [
        Change(
            path,
            "other",
            path,
            f"{status}; no rule explains this file, review the diff",
            actions=(Action("review", path),),
        )
    ]


def _ansible_copy(path: str, status: str, name: str) -> list[Change]:
    return [
        Change(
            path,
            "ansible-files",
            f"copy of slurm/{name}",
            "the copy of the Slurm file the Ansible roles install; its changes are explained "
            f"under slurm/{name}",
            actions=ansible_for(name),
        )
    ]


def _ansible_other(path: str, status: str, *_: str) -> list[Change]:
    match = re.match(r"ansible/roles/([^/]+)/", path)
    role = match.group(1) if match else ""
    return [
        Change(
            path,
            "ansible-roles",
            role or path,
            f"role {role} changed: run it everywhere it applies"
            if role
            else "the playbook itself changed: run it",
            actions=(Action("ansible-playbook", f"all:{role}"),),
        )
    ]


def _examples(path: str, status: str, cluster: str, team: str) -> list[Change]:
    return [
        Change(
            path,
            "kubernetes-examples",
            f"{cluster} examples for {team}",
            "example jobs showing the team's queue change; nothing applies them (the "
            "kustomization does not list examples/), so nothing changes on the cluster",
            actions=(Action("review", path),),
        )
    ]


def _kubernetes_other(path: str, status: str, cluster: str, name: str) -> list[Change]:
    return [
        Change(
            path,
            "kubernetes-manifest",
            f"{cluster}/{name}",
            "the kustomization or its notes change; nothing changes on the cluster by itself",
            actions=(Action("review", path),),
        )
    ]


def _gitops(path: str, status: str, cluster: str, name: str) -> list[Change]:
    """The GitOps engine's objects: the engine applies what it syncs once the output is
    committed; what is applied once by hand (Flux's sync.yaml, Argo CD's root Application and
    its argocd-cm patch) is applied again when it changes."""
    by_hand = name in ("sync.yaml", "root.yaml", "application-health.yaml")
    meaning = (
        f"applied by hand, not synced: apply gitops/{cluster}/{name} again once committed"
        if by_hand
        else "the GitOps engine syncs it once the output is committed; "
        "its releases and objects are explained under kubernetes/" + cluster
    )
    return [
        Change(
            path,
            "kubernetes-gitops",
            f"{cluster}/{name}",
            f"{status}; {meaning}",
            actions=(Action("review", path),),
        )
    ]


def _pulumi_program(path: str, status: str, cluster: str, name: str) -> list[Change]:
    if name == "requirements.txt":
        meaning = (
            "the program's Python dependencies change: recreate the project's "
            "virtualenv (pulumi install) before pulumi up"
        )
        kind = "pulumi-dependencies"
    else:
        meaning = "the Pulumi program or its stack configuration changes: preview and apply"
        kind = "pulumi-program"
    return [
        Change(path, kind, f"{cluster}/{name}", meaning, actions=(Action("pulumi-up", cluster),))
    ]


def _stack_settings(path: str, status: str, cluster: str, stack: str) -> list[Change]:
    if status != "removed":
        return _pulumi_program(path, status, cluster, f"Pulumi.{stack}.yaml")
    return [
        Change(
            path,
            "pulumi-stack-settings",
            f"{cluster}/Pulumi.{stack}.yaml",
            "estategen no longer writes stack settings: the config moved to Pulumi.yaml's "
            "project config. A copy edited since it was rendered (Pulumi's encryptionsalt, your "
            "keys) is kept as yours, an untouched one is removed; keys kept there override "
            "Pulumi.yaml",
            actions=(Action("review", path),),
        )
    ]


def _prometheus(path: str, status: str, name: str) -> list[Change]:
    if name.startswith("targets/"):
        return [
            Change(
                path,
                "prometheus-targets",
                name,
                "Prometheus re-reads file_sd target files when they change: copy them to the "
                "Prometheus server, no reload needed",
                actions=(Action("review", "copy observability/prometheus/targets/ to Prometheus"),),
            )
        ]
    return [
        Change(
            path,
            "prometheus-config",
            name,
            "the scrape jobs or the estate's rules change: Prometheus needs a reload",
            actions=(Action("prometheus-reload"),),
        )
    ]


def _grafana(path: str, status: str, name: str) -> list[Change]:
    return [
        Change(
            path,
            "grafana-dashboard",
            name,
            "Grafana re-reads provisioned dashboards when their files change: copy them to "
            "the Grafana server, no restart needed",
            actions=(Action("review", "copy observability/grafana/dashboards/ to Grafana"),),
        )
    ]


def _estate_json(path: str, status: str, *_: str) -> list[Change]:
    return [
        Change(
            path,
            "review",
            "estate.json",
            "the resolved blueprint, for review and pipelines; nothing reads it at run time",
            actions=(Action("review", path),),
        )
    ]


def _health_check_program(path: str, status: str, pool: str) -> list[Change]:
    if status == "removed":
        meaning = (
            f"pool {pool} no longer has a health check (or no longer exists); the program "
            "stays on its nodes until removed, and slurmd stops running it once slurm.conf "
            "drops HealthCheckProgram"
        )
    else:
        meaning = (
            f"the health-check program of pool {pool}: Ansible installs it on the pool's "
            "nodes as /etc/slurm/healthcheck.sh and slurmd runs the new one at its next check, "
            "without a restart; a node it drains keeps running its jobs"
        )
    return [
        Change(
            path,
            "slurm-health-check-program",
            f"pool {pool}",
            meaning,
            actions=ansible_for(path) if status != "removed" else (),
        )
    ]


def _power_program(path: str, status: str, program: str) -> list[Change]:
    return [
        Change(
            path,
            "slurm-power-program",
            f"{program}.sh",
            f"the {'Resume' if program == 'resume' else 'Suspend'}Program of the cloud nodes: "
            "Ansible installs it on the controllers under /etc/slurm/power, and slurmctld runs "
            "the new one the next time it creates or deletes instances, without a restart",
            actions=ansible_for(path) if status != "removed" else (),
        )
    ]


Explainer = Callable[..., list[Change]]


_EXPLAINERS: list[tuple[str, Explainer]] = [
    (r"slurm/healthcheck/([a-z0-9-]+)\.sh", _health_check_program),
    (r"slurm/power/(resume|suspend)\.sh", _power_program),
    (r"ansible/files/slurm/(.+)", _ansible_copy),
    (r"ansible/.+", _ansible_other),
    (r"kubernetes/([^/]+)/examples/([^/]+)\.yaml", _examples),
    (r"kubernetes/([^/]+)/(.+)", _kubernetes_other),
    (r"gitops/([^/]+)/(.+)", _gitops),
    (r"pulumi/([^/]+)/Pulumi\.([^/]+)\.yaml", _stack_settings),
    (r"pulumi/([^/]+)/([^/]+)", _pulumi_program),
    (r"observability/prometheus/(.+)", _prometheus),
    (r"observability/grafana/(.+)", _grafana),
    (r"estate\.json", _estate_json),
]
