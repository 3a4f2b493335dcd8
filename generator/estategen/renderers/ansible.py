"""The machines: a self-contained Ansible tree under ``ansible/``.

The inventory, group variables, ``vars/`` and site.yml come from the model. Where a variable
goes: ``group_vars/all/estate.yml`` holds what hosts of every kind read, each value of a size
independent of the estate's users, teams, pools and hosts; ``group_vars/pool_<name>.yml`` what
a pool's hosts read; what differs from host to host (a Kubernetes node's switch label) on its
hosts in ``inventory.yml``; ``vars/<topic>.yml`` the lists that grow with the estate (users and
teams), loaded with ``vars_files`` by the one play whose role reads them, so the inventory
(``ansible-inventory --list`` prints every host's variables) stays small; the roles are copied from
``playbooks/roles`` in the package, with ``playbooks/requirements.yml`` (the collections they
use beyond ansible-core); the Slurm files the roles install are the rendered
``slurm/`` files, byte for byte, under ``ansible/files/slurm/``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import asdict
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from estategen import hostlist
from estategen.facts import JWT_KEY_PATH, group_name, mig_layout, pool_group, pool_mounts
from estategen.kubernetes_facts import (
    host_label_runs,
    kubelet_taint,
    pods_per_node,
    registration_labels,
)
from estategen.model import Estate, NodePool, Storage, shares_state_and_spool, slurm_build
from estategen.output import Files, OutputFile, renderer, templates, text
from estategen.prometheus_rules import slurm_exporter_host
from estategen.renderers.slurm import slurm_files
from estategen.schema.values import SYSTEM_DIRECTORIES, SYSTEM_TREES
from estategen.yamltext import block

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


def _pool_hosts(pool: NodePool) -> dict[str, dict[str, Any] | None]:
    """A pool's hosts as patterns; on a Kubernetes pool each run of hosts with labels of
    their own (their switch) carries them as ``pool_host_labels``, for kubelet to register.

    Host variables, not a pool-wide map: ``ansible-inventory --list`` prints each host's
    variables, and a host then carries its own labels only, whatever its pool's size.
    """
    runs = host_label_runs(pool) if pool.scheduler == "kubernetes" else []
    out: dict[str, dict[str, Any] | None] = {}
    for run in runs:
        for pattern in ansible_patterns(run.hosts):
            out[pattern] = {"pool_host_labels": dict(run.labels)}
    labelled = {host for run in runs for host in run.hosts}
    out.update(_hosts(h for h in pool.hosts if h not in labelled))
    return out


def inventory(estate: Estate) -> dict[str, Any]:
    slurm = estate.slurm
    # hosted Slurm pools are slurmd pods in Kubernetes: no hosts for Ansible
    on_prem = [p for p in estate.node_pools if not p.managed and not p.hosted]
    children: dict[str, Any] = {}
    for pool in on_prem:
        children[pool_group(pool.name)] = {"hosts": _pool_hosts(pool)}
    if estate.slurm_pools:
        children["slurm_controller"] = {"hosts": _hosts(slurm.controllers)}
        # an elastic cloud pool's group has no hosts: the VM its image is built on is added to
        # it from a second inventory
        children["slurm_compute"] = {
            "children": {pool_group(p.name): None for p in estate.slurm_pools if not p.hosted}
        }
    if slurm.rest_api and estate.slurm_pools:
        children["slurmrestd"] = {"hosts": _hosts([slurm.rest_api.host])}
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


def _storage_vars(storage: Storage) -> dict[str, Any]:
    """One file system as the storage_client role reads it; each type's own fields beside the
    common ones, secrets by the name of their Vault variable."""
    out: dict[str, Any] = {
        "name": storage.name,
        "type": storage.type,
        "source": storage.source,
        "mount": storage.mount,
        "options": ",".join(storage.options) or "defaults",
        "everywhere": storage.pools is None,
    }
    if storage.type == "s3":
        assert storage.access_key_id and storage.secret_access_key
        bucket, prefix = storage.bucket_and_prefix
        out["s3"] = {
            "bucket": bucket,
            "prefix": prefix,
            "region": storage.region,
            # Mountpoint's command-line flags: `allow-delete` -> `--allow-delete`
            "flags": [f"--{option}" for option in storage.options],
            "access_key_id_secret": storage.access_key_id.name,
            "secret_access_key_secret": storage.secret_access_key.name,
        }
    elif storage.type == "beegfs":
        assert storage.conn_auth
        host, _, port = storage.source.removeprefix("beegfs://").rstrip("/").partition(":")
        out["beegfs"] = {
            "mgmtd_host": host,
            "mgmtd_port": int(port) if port else None,
            "conn_auth_secret": storage.conn_auth.name,
        }
    elif storage.type == "weka":
        backends, _, file_system = storage.source.partition("/")
        # the agent and its installer come from a backend (WEKA's stateless clients)
        out["weka"] = {"backend": backends.split(",")[0], "file_system": file_system}
    return out


def _built(estate: Estate) -> list[NodePool]:
    """Pools whose machines Ansible builds: on-prem hosts, and the images of Slurm cloud pools."""
    return [p for p in estate.node_pools if (not p.managed or p.elastic) and not p.hosted]


def _pool_vars(estate: Estate, pool: NodePool) -> dict[str, Any]:
    gpu: dict[str, Any] | None = None
    if pool.gpus:
        model = estate.gpu_models[pool.gpus.model]
        gpu = {
            "model": model.name,
            "count": pool.gpus.per_node,
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
        # kubelet registers the node with these labels and each host's own (its switch:
        # pool_host_labels, on its hosts in the inventory): the set the Node patches carry
        "pool_node_labels": registration_labels(estate, pool) if kubernetes else {},
        "pool_node_taints": [kubelet_taint(t) for t in pool.taints],
        "pool_storage": [s.name for s in pool_mounts(estate, pool)],
    }
    if kubernetes and pool.max_pods is not None:
        # kubelet's --max-pods (role k8s_gpu_node); unset, kubelet's own default holds
        pool_vars["pool_max_pods"] = pods_per_node(pool)
    if pool.cloud_nodes:
        # a cloud pool: the play builds the pool's image; slurmd starts on the instances
        # (for `state: cloud`, the image the site's ResumeProgram boots)
        pool_vars["pool_cloud_image"] = True
    return pool_vars


def _identity_vars(estate: Estate) -> dict[str, Any]:
    """The users and teams, for the play of the common role only (``vars/identity.yml``).

    Lists that grow with the estate stay out of the inventory's variables: every host would
    carry them (``ansible-inventory --list`` prints them once per host).
    """
    identity = estate.identity
    teams_of: dict[str, list[str]] = {}
    for team in identity.teams:
        for member in team.members:
            teams_of.setdefault(member, []).append(team.name)
    return {
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
    }


def _all_vars(estate: Estate, slurm_names: list[str]) -> dict[str, Any]:
    """Variables every host carries: each one's size is independent of the number of users,
    teams, pools and hosts (those lists live in ``vars/``, loaded by the plays that read them)."""
    directory = estate.identity.directory
    accounting = estate.slurm.accounting
    rest = estate.slurm.rest_api
    packages = estate.slurm.packages
    build = slurm_build(packages)
    out: dict[str, Any] = {
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
        "estate_storage": [_storage_vars(s) for s in estate.storage],
        "estate_dcgm_exporter_port": estate.observability.dcgm_exporter_port,
        "estate_node_exporter_port": estate.observability.node_exporter_port,
        "estate_slurm_exporter_port": estate.observability.slurm_exporter_port,
        "estate_slurm_exporter_host": slurm_exporter_host(estate),
        "slurm_cluster_name": estate.slurm.cluster_name,
        "slurm_version": estate.versions.slurm.text,
        # where the Slurm packages come from (slurm.packages): the slurm_packages role adds the
        # site's repository and its key (empty: Debian's own packages), and installs the
        # package with auth_jwt.so where the source ships it apart
        "slurm_packages_apt_repository": packages.apt_repository or "",
        "slurm_packages_apt_key_url": packages.apt_key_url or "",
        "slurm_packages_extra_names": [build.jwt_package] if rest and build.jwt_package else [],
        "slurm_config_files": [
            n for n in slurm_names if n.endswith(".conf") and n != "slurmdbd.conf"
        ],
        "slurm_accounting": accounting is not None,
        "slurm_database_password_secret": accounting.database.password.name if accounting else None,
        "slurm_database_name": accounting.database.name if accounting else None,
        "slurm_database_host": accounting.database.host if accounting else None,
        "slurm_accounting_port": accounting.port if accounting else None,
        "slurm_database_user": accounting.database.user if accounting else None,
        # --- the daemons' folders and slurmd's user (slurm.paths) ---
        "slurm_controller_folders": slurm_folders(estate, controller=True),
        "slurm_compute_folders": slurm_folders(estate, controller=False),
        "slurm_slurmd_user": estate.slurm.site.slurmd_user or "root",
        # the site's own power programs (slurm.power_saving), which the controller
        # role checks are in place: slurmctld would run without power saving otherwise
        "slurm_site_power_programs": [
            path
            for path in (
                estate.slurm.power_saving.resume_program,
                estate.slurm.power_saving.suspend_program,
                estate.slurm.power_saving.resume_fail_program,
            )
            if path
        ],
        # --- MPI and the REST API ---
        "slurm_mpi_default": estate.slurm.mpi.default,
        "slurm_rest_api": {
            "host": rest.host,
            "port": rest.port,
            "user": rest.user,
            "jwt_key_secret": rest.jwt_key.name,
            "jwt_key_path": JWT_KEY_PATH,
        }
        if rest
        else None,
    }
    if estate.slurm.auth_key is not None:
        # Slurm hosted in Kubernetes: slurm.conf says auth/slurm; every Slurm host
        # gets the key the Slinky pods share (roles/slurm_packages)
        out["slurm_auth_key_secret"] = estate.slurm.auth_key.name
    return out


def slurm_folders(estate: Estate, controller: bool) -> list[str]:
    """The folders the controller (or compute) role creates for slurm.conf's paths: the state
    (or spool) folder, and the folders of the log and pid files unless they are system
    folders such as /run or /var/log, which exist and stay the system's."""
    paths = estate.slurm.site.paths
    if controller:
        own, files = paths.state_save_location, (paths.slurmctld_log_file, paths.slurmctld_pid_file)
    else:
        own, files = paths.slurmd_spool_dir, (paths.slurmd_log_file, paths.slurmd_pid_file)
    # one folder for StateSaveLocation and SlurmdSpoolDir is the controller role's, owned by
    # SlurmUser (slurmd, as root, writes there; on other hosts it makes its spool itself,
    # 0755): the compute role leaves it alone, or the two roles would take it from each other
    shared = not controller and shares_state_and_spool(asdict(paths))
    folders = [] if shared else [own]
    for file in files:
        folder = posixpath.dirname(file)
        if folder not in SYSTEM_DIRECTORIES and folder not in SYSTEM_TREES:
            folders.append(folder)
    return list(dict.fromkeys(folders))


def _yaml(data: Any, comment: str) -> str:
    return f"---\n# {comment}\n{block(data)}"


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
        "ansible/vars/identity.yml": text(
            _yaml(_identity_vars(estate), "Users and teams for the common role's play.")
        ),
        "ansible/site.yml": text(
            templates()
            .get_template("ansible/site.yml.j2")
            .render(
                estate=estate,
                has_slurm=bool(estate.slurm_pools),
                has_accounting=estate.slurm.accounting is not None and bool(estate.slurm_pools),
                has_rest_api=estate.slurm.rest_api is not None and bool(estate.slurm_pools),
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
