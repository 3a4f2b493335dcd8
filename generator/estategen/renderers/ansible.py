"""The machines: a self-contained Ansible tree under ``ansible/``.

The inventory, group variables and site.yml come from the model; the roles are copied from
``playbooks/roles`` in the package, with ``playbooks/requirements.yml`` (the collections they
use beyond ansible-core); the Slurm files the roles install are the rendered
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
from estategen.facts import (
    group_name,
    host_labels,
    kubelet_taint,
    mig_layout,
    node_labels,
    pool_group,
    pool_mounts,
)
from estategen.model import Estate, NodePool
from estategen.render import Files, OutputFile, renderer, templates, text
from estategen.renderers.slurm import slurm_files

_BRACKET = re.compile(r"^(?P<prefix>[^\[]*)\[(?P<ranges>[^\]]*)\](?P<suffix>.*)$")


def _ansible_runs(low: str, high: str) -> list[str]:
    """One Slurm run ``low-high`` as Ansible range bodies, split where the width grows.

    Ansible refuses a zero-padded start whose end is longer ("host range must specify
    equal-length begin and end formats"), so ``01-100`` becomes ``[01:99]`` and ``100``.
    """
    if len(low) > 1 and low.startswith("0") and len(high) != len(low):
        last_padded = 10 ** len(low) - 1
        return [*_ansible_runs(low, str(last_padded)), *_ansible_runs(str(last_padded + 1), high)]
    return [f"[{low}:{high}]"] if low != high else [low]


def ansible_patterns(names: Iterable[str]) -> list[str]:
    """Host names as Ansible inventory patterns: ``gpu-[001:032]`` for each contiguous run."""
    compressed = hostlist.compress(names)
    patterns: list[str] = []
    for entry in hostlist.split_items(compressed) if compressed else []:
        match = _BRACKET.match(entry)
        if not match:
            patterns.append(entry)
            continue
        for run in match["ranges"].split(","):
            low, _, high = run.partition("-")
            for middle in _ansible_runs(low, high or low):
                patterns.append(f"{match['prefix']}{middle}{match['suffix']}")
    return patterns


def _hosts(names: Iterable[str]) -> dict[str, None]:
    return {pattern: None for pattern in ansible_patterns(names)}


def inventory(estate: Estate) -> dict[str, Any]:
    slurm = estate.slurm
    on_prem = [p for p in estate.node_pools if not p.managed]
    children: dict[str, Any] = {}
    for pool in on_prem:
        children[pool_group(pool.name)] = {"hosts": _hosts(pool.hosts)}
    if estate.slurm_pools:
        children["slurm_controller"] = {"hosts": _hosts(slurm.controllers)}
        # a cloud pool's group (issue 14 part 5) has no hosts: the VM its image is built on is
        # added to it from a second inventory
        children["slurm_compute"] = {
            "children": {pool_group(p.name): None for p in estate.slurm_pools}
        }
    if slurm.accounting and estate.slurm_pools:
        children["slurmdbd"] = {"hosts": _hosts([slurm.accounting.host])}
        database = slurm.accounting.database.host
        if database != "localhost":
            children["slurm_database"] = {"hosts": {database: None}}
    k8s = [p for p in on_prem if p.scheduler == "kubernetes"]
    if k8s:
        children["k8s_nodes"] = {"children": {pool_group(p.name): None for p in k8s}}
        gpu = [p for p in k8s if p.gpus]
        if gpu:
            children["k8s_gpu_nodes"] = {"children": {pool_group(p.name): None for p in gpu}}
        for cluster in estate.kubernetes_clusters:
            members = [p for p in k8s if p.cluster == cluster.name]
            if members:
                children[group_name("k8s_cluster", cluster.name)] = {
                    "children": {pool_group(p.name): None for p in members}
                }
    gpu_pools = [p for p in _built(estate) if p.gpus]
    if gpu_pools:
        children["gpu_nodes"] = {"children": {pool_group(p.name): None for p in gpu_pools}}
    return {"all": {"children": children}}


def _built(estate: Estate) -> list[NodePool]:
    """Pools whose machines Ansible builds: on-prem hosts, and the images of Slurm cloud pools."""
    return [p for p in estate.node_pools if not p.managed or p.elastic]


def _pool_vars(estate: Estate, pool: NodePool) -> dict[str, Any]:
    gpu: dict[str, Any] | None = None
    if pool.gpus:
        model = estate.gpu_models[pool.gpus.model]
        gpu = {
            "model": model.name,
            "count": pool.gpus.count,
            "fabric": model.fabric,
            "mig": mig_layout(pool),
            "time_slicing": pool.gpus.sharing.time_slicing,
            "mps": pool.gpus.sharing.mps,
        }
    kubernetes = pool.scheduler == "kubernetes"
    pool_vars: dict[str, Any] = {
        "pool_name": pool.name,
        "pool_scheduler": pool.scheduler,
        "pool_kubernetes_cluster": pool.cluster,
        "pool_gpu": gpu,
        "pool_features": list(pool.features),
        # kubelet registers the node with these labels (and each host with its own, such as
        # its switch): the same set the Pulumi program patches onto the node
        "pool_node_labels": node_labels(estate, pool) if kubernetes else {},
        "pool_node_taints": [kubelet_taint(t) for t in pool.taints],
        "pool_storage": [s.name for s in pool_mounts(estate, pool)],
    }
    if kubernetes:
        pool_vars["pool_node_host_labels"] = host_labels(pool)
    if pool.elastic:
        # issue 14 part 5: the play builds the pool's image; slurmd starts on the instances
        pool_vars["pool_cloud_image"] = True
    return pool_vars


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
        "slurm_version": estate.versions.slurm.text,
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


def _dump(data: Any) -> str:
    return yaml.dump(
        data, Dumper=_IndentedDumper, default_flow_style=False, sort_keys=True, width=1000
    )


def _yaml(data: Any, comment: str) -> str:
    return f"---\n# {comment}\n{_block(data)}"


class _Unusual(Exception):
    """Data the block writer does not reproduce exactly; PyYAML writes the whole document."""


# Strings PyYAML writes plain (unquoted) in block context, when the YAML 1.1 resolver also
# reads them back as strings: no indicator first, no ": " or " #", ASCII, no spaces.
_PLAIN = re.compile(r"[A-Za-z0-9_/](?:[A-Za-z0-9_./=@+\[\],-]|:(?=.))*")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
# What PyYAML writes for other strings, which are rare; its style choice does not depend on
# where the string stands once it is on one line, is not empty and is a short key.
_QUOTED: dict[str, str] = {}
_LONGEST_SCALAR = 200  # far below width=1000 and the 128-character simple key limit
_LINE_BREAKS = frozenset("\n\r\x85\u2028\u2029")


def _scalar(value: object) -> str:
    kind = type(value)
    if kind is str:
        text: str = value  # type: ignore[assignment]
        if (
            len(text) <= _LONGEST_SCALAR
            and _PLAIN.fullmatch(text)
            and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG  # type: ignore[no-untyped-call]
        ):
            return text
        cached = _QUOTED.get(text)
        if cached is not None:
            return cached
        if len(text) > _LONGEST_SCALAR:
            raise _Unusual
        line = _dump([text])
        if not line.startswith("- ") or line.count("\n") != 1:
            raise _Unusual
        if len(_QUOTED) < 10_000:
            _QUOTED[text] = line[2:-1]
        return line[2:-1]
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    raise _Unusual  # floats and others: rare, and PyYAML's spelling is subtle


def _block(data: Any) -> str:
    """``_dump(data)`` for the shapes Ansible variables take, without PyYAML's emitter.

    PyYAML's pure-Python emitter spent most of a large estate's render time on
    group_vars; this writes the same bytes (block style, two-space indent, sorted keys,
    list items indented under their key) and hands anything unusual back to PyYAML.
    """
    try:
        out: list[str] = []
        seen: set[int] = {id(data)}
        if type(data) is dict and data:
            _write_mapping(data, "", out, seen)
        elif type(data) is list and data:
            _write_sequence(data, "", out, seen)
        else:
            raise _Unusual
        return "".join(out)
    except (_Unusual, TypeError):  # TypeError: keys that do not sort
        return _dump(data)


def _write_value(value: Any, indent: str, out: list[str], seen: set[int]) -> None:
    """Write what follows a ``key:`` or ``-`` at ``indent``, starting on that line."""
    kind = type(value)
    if kind is dict or kind is list:
        if id(value) in seen:  # shared object: PyYAML writes an anchor and an alias
            raise _Unusual
        seen.add(id(value))
        if not value:
            out.append(" {}\n" if kind is dict else " []\n")
        elif kind is dict:
            out.append("\n")
            _write_mapping(value, indent + "  ", out, seen)
        else:
            out.append("\n")
            _write_sequence(value, indent + "  ", out, seen)
    else:
        out.append(f" {_scalar(value)}\n")


def _write_mapping(mapping: dict[Any, Any], indent: str, out: list[str], seen: set[int]) -> None:
    for key in sorted(mapping):
        if type(key) is not str or not key or len(key) > 100 or _LINE_BREAKS & set(key):
            raise _Unusual  # PyYAML writes these as "? key" complex keys
        out.append(f"{indent}{_scalar(key)}:")
        _write_value(mapping[key], indent, out, seen)


def _write_sequence(items: list[Any], indent: str, out: list[str], seen: set[int]) -> None:
    for item in items:
        kind = type(item)
        if kind is dict and item:
            if id(item) in seen:
                raise _Unusual
            seen.add(id(item))
            # the first key shares the line of the dash: "- name: x"
            start = len(out)
            _write_mapping(item, indent + "  ", out, seen)
            out[start] = f"{indent}- {out[start][len(indent) + 2 :]}"
        elif kind is list and item:
            raise _Unusual  # "- - x": nested lists do not occur in group_vars
        else:
            out.append(f"{indent}-")
            _write_value(item, indent, out, seen)


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
    files["ansible/requirements.yml"] = OutputFile(root.joinpath("requirements.yml").read_bytes())
    return files


@renderer
def ansible_files(estate: Estate) -> Files:
    built = _built(estate)
    if not built:
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
                has_k8s=any(p.scheduler == "kubernetes" for p in built),
                has_gpus=any(p.gpus for p in built),
            )
        ),
    }
    for pool in built:
        files[f"ansible/group_vars/{pool_group(pool.name)}.yml"] = text(
            _yaml(_pool_vars(estate, pool), f"Pool {pool.name}, rendered by estategen.")
        )
    for path, output in slurm.items():
        files[f"ansible/files/{path}"] = output
    files.update(_role_files())
    return files
