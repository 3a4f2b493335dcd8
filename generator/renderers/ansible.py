"""The machines: a self-contained Ansible tree under ``ansible/``.

The inventory, group variables and site.yml come from the model; the roles are copied from
``playbooks/roles`` in the package; the Slurm files the roles install are the rendered
``slurm/`` files, byte for byte, under ``ansible/files/slurm/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import yaml

from estategen import hostlist
from estategen.model import Estate, NodePool
from estategen.render import Files, OutputFile, renderer, templates, text
from estategen.renderers.slurm import slurm_files

_BRACKET = re.compile(r"^(?P<prefix>[^\[]*)\[(?P<ranges>[^\]]*)\](?P<suffix>.*)$")


def ansible_patterns(names: Iterable[str]) -> list[str]:
    """Host names as Ansible inventory patterns: ``gpu-[001:032]`` for each contiguous run."""
    compressed = hostlist.compress(names)
    patterns: list[str] = []
    depth = 0
    item = ""
    items = []
    for char in compressed:
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += char
    if item:
        items.append(item)
    for entry in items:
        match = _BRACKET.match(entry)
        if not match:
            patterns.append(entry)
            continue
        for run in match["ranges"].split(","):
            low, _, high = run.partition("-")
            middle = f"[{low}:{high}]" if high else low
            patterns.append(f"{match['prefix']}{middle}{match['suffix']}")
    return patterns


def group_name(kind: str, name: str) -> str:
    """Ansible group names may not hold '-': ``pool_a100_mig``."""
    return f"{kind}_{name.replace('-', '_')}"


def _hosts(names: Iterable[str]) -> dict[str, None]:
    return {pattern: None for pattern in ansible_patterns(names)}


def inventory(estate: Estate) -> dict[str, Any]:
    slurm = estate.slurm
    on_prem = [p for p in estate.node_pools if not p.managed]
    children: dict[str, Any] = {}
    for pool in on_prem:
        children[group_name("pool", pool.name)] = {"hosts": _hosts(pool.hosts)}
    if estate.slurm_pools:
        children["slurm_controller"] = {"hosts": _hosts(slurm.controllers)}
        children["slurm_compute"] = {
            "children": {group_name("pool", p.name): None for p in estate.slurm_pools}
        }
    if slurm.accounting and estate.slurm_pools:
        children["slurmdbd"] = {"hosts": _hosts([slurm.accounting.host])}
        database = slurm.accounting.database.host
        if database != "localhost":
            children["slurm_database"] = {"hosts": {database: None}}
    k8s = [p for p in on_prem if p.scheduler == "kubernetes"]
    if k8s:
        children["k8s_nodes"] = {"children": {group_name("pool", p.name): None for p in k8s}}
        gpu = [p for p in k8s if p.gpus]
        if gpu:
            children["k8s_gpu_nodes"] = {
                "children": {group_name("pool", p.name): None for p in gpu}
            }
        for cluster in estate.kubernetes_clusters:
            members = [p for p in k8s if p.cluster == cluster.name]
            if members:
                children[group_name("k8s_cluster", cluster.name)] = {
                    "children": {group_name("pool", p.name): None for p in members}
                }
    gpu_pools = [p for p in on_prem if p.gpus]
    if gpu_pools:
        children["gpu_nodes"] = {"children": {group_name("pool", p.name): None for p in gpu_pools}}
    return {"all": {"children": children}}


def _pool_vars(estate: Estate, pool: NodePool) -> dict[str, Any]:
    gpu: dict[str, Any] | None = None
    if pool.gpus:
        model = estate.gpu_models[pool.gpus.model]
        gpu = {
            "model": model.name,
            "count": pool.gpus.count,
            "fabric": model.fabric,
            "mig": list(pool.gpus.mig),
            "time_slicing": pool.gpus.sharing.time_slicing,
            "mps": pool.gpus.sharing.mps,
        }
    mounts = [s.name for s in estate.storage if s.pools is None or pool.name in s.pools]
    return {
        "pool_name": pool.name,
        "pool_scheduler": pool.scheduler,
        "pool_kubernetes_cluster": pool.cluster,
        "pool_gpu": gpu,
        "pool_features": list(pool.features),
        "pool_node_labels": _node_labels(pool),
        "pool_node_taints": [
            f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
            for t in pool.taints
        ],
        "pool_storage": mounts,
    }


def _node_labels(pool: NodePool) -> dict[str, str]:
    """Labels kubelet registers the node with: the pool's own and the GPU selectors."""
    if pool.scheduler != "kubernetes":
        return {}
    labels = dict(pool.labels)
    labels["estategen.io/pool"] = pool.name
    if pool.gpus:
        labels["nvidia.com/device-plugin.config"] = pool.name
        if pool.gpus.mig:
            labels["nvidia.com/mig.config"] = pool.name
    return dict(sorted(labels.items()))


def _all_vars(estate: Estate, slurm_names: list[str]) -> dict[str, Any]:
    identity = estate.identity
    teams_of: dict[str, list[str]] = {}
    for team in identity.teams:
        for member in team.members:
            teams_of.setdefault(member, []).append(team.name)
    directory = identity.directory
    accounting = estate.slurm.accounting
    return {
        "estate_name": estate.name,
        "estate_labels": dict(estate.observability.labels),
        "estate_directory": {
            "type": directory.type,
            "uri": directory.uri,
            "base_dn": directory.base_dn,
            "bind_dn": directory.bind_dn,
            "bind_password_secret": directory.bind_password.name
            if directory.bind_password
            else None,
        },
        "estate_teams": [{"name": t.name, "gid": t.gid} for t in identity.teams],
        "estate_users": [
            {
                "name": u.name,
                "uid": u.uid,
                "group": teams_of[u.name][0] if u.name in teams_of else None,
                "groups": teams_of.get(u.name, [])[1:],
            }
            for u in identity.users
        ],
        "estate_storage": [
            {
                "name": s.name,
                "type": s.type,
                "source": s.source,
                "mount": s.mount,
                "options": ",".join(s.options) or "defaults",
                "everywhere": s.pools is None,
            }
            for s in estate.storage
        ],
        "estate_dcgm_exporter_port": estate.observability.dcgm_exporter_port,
        "estate_node_exporter_port": estate.observability.node_exporter_port,
        "slurm_cluster_name": estate.slurm.cluster_name,
        "slurm_config_files": [
            n for n in slurm_names if n.endswith(".conf") and n != "slurmdbd.conf"
        ],
        "slurm_accounting": accounting is not None,
        "slurm_database_password_secret": accounting.database.password.name if accounting else None,
        "slurm_database_name": accounting.database.name if accounting else None,
        "slurm_database_host": accounting.database.host if accounting else None,
        "slurm_accounting_port": accounting.port if accounting else None,
        "slurm_database_user": accounting.database.user if accounting else None,
    }


class _IndentedDumper(yaml.SafeDumper):
    """Indent list items under their key, as yamllint (and ansible-lint) expect."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _yaml(data: Any, comment: str) -> str:
    body = yaml.dump(
        data, Dumper=_IndentedDumper, default_flow_style=False, sort_keys=True, width=1000
    )
    return f"---\n# {comment}\n{body}"


def _role_files() -> dict[str, OutputFile]:
    files: dict[str, OutputFile] = {}
    root = resources.files("estategen").joinpath("playbooks")

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name.startswith(".") or child.name == "__pycache__":
                continue
            path = f"{prefix}/{child.name}"
            if child.is_dir():
                walk(child, path)
            else:
                files[f"ansible{path}"] = OutputFile(child.read_bytes())

    walk(root.joinpath("roles"), "/roles")
    return files


@renderer
def ansible_files(estate: Estate) -> Files:
    on_prem = [p for p in estate.node_pools if not p.managed]
    if not on_prem:
        return {}
    slurm = slurm_files(estate)
    names = sorted(path.split("/", 1)[1] for path in slurm)
    files: Files = {
        "ansible/ansible.cfg": text(templates().get_template("ansible/ansible.cfg.j2").render()),
        "ansible/inventory.yml": text(
            _yaml(inventory(estate), f"Inventory of estate {estate.name}, rendered by estategen.")
        ),
        "ansible/group_vars/all/estate.yml": text(
            _yaml(_all_vars(estate, names), "Estate-wide variables, rendered by estategen.")
        ),
        "ansible/site.yml": text(
            templates()
            .get_template("ansible/site.yml.j2")
            .render(
                estate=estate,
                has_slurm=bool(estate.slurm_pools),
                has_accounting=estate.slurm.accounting is not None and bool(estate.slurm_pools),
                has_k8s=any(p.scheduler == "kubernetes" for p in on_prem),
                has_gpus=any(p.gpus for p in on_prem),
            )
        ),
    }
    for pool in on_prem:
        files[f"ansible/group_vars/{group_name('pool', pool.name)}.yml"] = text(
            _yaml(_pool_vars(estate, pool), f"Pool {pool.name}, rendered by estategen.")
        )
    for path, output in slurm.items():
        files[f"ansible/files/{path}"] = output
    files.update(_role_files())
    return files
