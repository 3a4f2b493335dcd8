"""Each derived fact has one definition (estategen.facts), and every output that carries it agrees.

The outputs are read as their engines read them: kubelet's arguments and mig-parted's file as
Ansible templates them (``ansible`` ad hoc, template lookup), Node patches and ConfigMaps as the
Pulumi program registers them (under Pulumi's mocks), gres.conf as rendered.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_pulumi import run_project

from estategen import estatediff, facts, kubernetes_facts, load, pipeline
from estategen.model import Estate
from estategen.render import render
from estategen.report.facts import build as build_report

from conftest import BLUEPRINTS
from k8s_harness import MESA, rendered

ROOT = Path(__file__).resolve().parents[1]

needs_ansible = pytest.mark.skipif(not shutil.which("ansible"), reason="needs ansible-core")

# The same MIG layout on a Slurm pool and on a Kubernetes pool, with queues on the cluster.
TWINS = """\
estate: twins
versions: {slurm: "24.05", kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}]
  teams: [{name: vision, gid: 21001, members: [ana], fairshare: 30}]
node_pools:
  - name: mig-slurm
    scheduler: slurm
    hosts: "s-a100-[01-03]"
    cpu: {sockets: 2, cores_per_socket: 32, threads_per_core: 2}
    memory_gb: 1024
    gpus: {model: a100-sxm-80gb, count: 8, mig: ["1g.10gb", "3g.40gb", "1g.10gb", "2g.20gb"]}
  - name: mig-k8s
    scheduler: kubernetes
    cluster: east
    hosts: "k-a100-[01-02]"
    cpu: {sockets: 2, cores_per_socket: 32, threads_per_core: 2}
    memory_gb: 1024
    gpus: {model: a100-sxm-80gb, count: 4, mig: ["1g.10gb", "3g.40gb", "1g.10gb", "2g.20gb"]}
slurm:
  controllers: [ctl-01]
  packages:
    source: site
    apt_repository: "deb https://slurm.example.org/debian bookworm main"
    nvml: true
    jwt: true
  partitions: [{name: mig, pools: [mig-slurm], default: true, max_time: "8:00:00"}]
kubernetes:
  clusters:
    - name: east
      device_plugin: {mig_strategy: mixed}
      queues:
        cohort: east
        teams: [{team: vision, quota: {a100-sxm-80gb/1g.10gb: 4, a100-sxm-80gb/3g.40gb: 2}}]
"""
LAYOUT = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}


def estate_of(text: str) -> Estate:
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    return pipeline.validate_document(document).estate


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("facts")


def templated(ansible: Path, group: str, template: str) -> dict[str, str]:
    """What Ansible makes of a role template on each host of a group: host -> text."""
    env = {
        **os.environ,
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_STDOUT_CALLBACK": "json",
    }
    lookup = f"{{{{ lookup('template', '{ansible / 'roles' / template}') }}}}"
    result = subprocess.run(
        [
            "ansible",
            "-i",
            "inventory.yml",
            group,
            "-c",
            "local",
            "-m",
            "debug",
            "-a",
            f"msg={lookup}",
        ],
        cwd=ansible,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    hosts = json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"]
    return {host: body["msg"] for host, body in hosts.items()}


def kubelet_registration(env_file: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(labels, taints) of a kubelet environment file, read as kubelet reads its flags."""
    args = re.search(r'KUBELET_EXTRA_ARGS="([^"]*)"', env_file)
    assert args, env_file
    labels: dict[str, str] = {}
    taints: list[dict[str, str]] = []
    for flag in args.group(1).split():
        name, _, value = flag.partition("=")
        if name == "--node-labels":
            labels = dict(item.split("=", 1) for item in value.split(","))
        elif name == "--register-with-taints":
            for item in value.split(","):
                key_value, _, effect = item.rpartition(":")
                key, _, taint_value = key_value.partition("=")
                taint = {"key": key, "effect": effect}
                if taint_value:
                    taint["value"] = taint_value
                taints.append(taint)
    return labels, taints


# --- node labels and taints ------------------------------------------------------------------


@needs_ansible
@pytest.mark.parametrize(
    ("source", "cluster"),
    [(str(BLUEPRINTS / "campus.yaml"), "serving"), (MESA, "onprem")],
    ids=["campus-serving", "mesa-onprem"],
)
def test_kubelet_registers_every_node_with_exactly_the_labels_nodes_yaml_records(
    out: Path, source: str, cluster: str
) -> None:
    """nodes.yaml (the labels the plan's label-nodes steps compare) holds what kubelet
    registers each node with."""
    folder = rendered(source, out / cluster)
    patches = {
        node["metadata"]["name"]: node
        for node in yaml.safe_load_all(
            (folder / "kubernetes" / cluster / "nodes.yaml").read_text(encoding="utf-8")
        )
        if node
    }
    kubelet = templated(
        folder / "ansible",
        facts.group_name("k8s_cluster", cluster),
        "k8s_gpu_node/templates/kubelet.env.j2",
    )
    assert set(kubelet) == set(patches)
    estate = estate_of(Path(source).read_text() if source.endswith(".yaml") else source)
    for host, env_file in kubelet.items():
        labels, taints = kubelet_registration(env_file)
        pool = next(p for p in estate.node_pools if host in p.hosts)
        # kubelet registers the patched labels and, once, the GPU deploy labels mig-manager
        # flips later; the patch never holds taints (an atomic list others add to)
        deploy = {k: v for k, v in labels.items() if k.startswith("nvidia.com/gpu.deploy.")}
        assert {k: v for k, v in labels.items() if k not in deploy} == patches[host]["metadata"][
            "labels"
        ], host
        assert deploy == (
            dict.fromkeys(kubernetes_facts.GPU_DEPLOY_LABELS.values(), "true") if pool.gpus else {}
        ), host
        assert taints == [kubernetes_facts.node_taint(t) for t in pool.taints], host
        assert "spec" not in patches[host], host
    if cluster == "onprem":  # switch labels differ per host, on both sides
        assert kubelet_registration(kubelet["k8s-l40s-04"])[0]["estategen.io/switch"] == "leaf-02"


def _switched(switches: str) -> Estate:
    """A Kubernetes pool of four hosts over ``switches`` (its network.switch)."""
    return estate_of(
        f"""\
estate: runs
versions: {{kubernetes: "1.31"}}
node_pools:
  - name: l40s
    scheduler: kubernetes
    cluster: serving
    hosts: k8s-[01-04]
    cpu: {{sockets: 1, cores_per_socket: 64, threads_per_core: 2}}
    memory_gb: 512
    gpus: {{model: l40s-48gb, count: 4}}
    network: {{switch: "{switches}"}}
  - name: plain
    scheduler: kubernetes
    cluster: serving
    hosts: k8s-plain-[01-02]
    cpu: {{sockets: 1, cores_per_socket: 64, threads_per_core: 2}}
    memory_gb: 512
kubernetes:
  clusters:
    - name: serving
"""
    )


@pytest.mark.parametrize(
    ("switches", "runs"),
    [
        ("kleaf-[01-02]", [("k8s-01", "k8s-02", "kleaf-01"), ("k8s-03", "k8s-04", "kleaf-02")]),
        # consecutive hosts on a switch named twice are one run; the same switch after
        # another is a run of its own
        ("kleaf-01,kleaf-01", [("k8s-01", "k8s-02", "k8s-03", "k8s-04", "kleaf-01")]),
        ("a,b,a,a", [("k8s-01", "a"), ("k8s-02", "b"), ("k8s-03", "k8s-04", "a")]),
    ],
)
def test_host_label_runs_are_consecutive_hosts_with_the_same_own_labels(
    switches: str, runs: list[tuple[str, ...]]
) -> None:
    estate = _switched(switches)
    pool = estate.pools_by_name["l40s"]
    found = kubernetes_facts.host_label_runs(pool)
    assert [(*run.hosts, run.labels[kubernetes_facts.SWITCH_LABEL]) for run in found] == runs
    assert all(list(run.labels) == [kubernetes_facts.SWITCH_LABEL] for run in found)
    assert [host for run in found for host in run.hosts] == list(pool.hosts)
    for run in found:
        for host in run.hosts:
            assert kubernetes_facts.labels_of_host(estate, pool, host) == {
                **kubernetes_facts.node_labels(estate, pool),
                **run.labels,
            }
    assert kubernetes_facts.host_label_runs(estate.pools_by_name["plain"]) == []


def test_node_labels_are_ones_kubelet_may_set_and_keep_what_nvidia_components_read() -> None:
    estate = estate_of(MESA)
    for pool in estate.kubernetes_pools:
        for host in pool.hosts or ("",):
            labels = kubernetes_facts.labels_of_host(estate, pool, host)
            assert all(kubernetes_facts.kubelet_may_set(key) for key in labels), labels
    mig = kubernetes_facts.node_labels(estate, estate.pools_by_name["a100-mig"])
    assert mig[kubernetes_facts.MIG_CONFIG_LABEL] == "a100-mig"
    assert mig[kubernetes_facts.PLUGIN_CONFIG_LABEL] == "a100-mig"
    gke = kubernetes_facts.node_labels(estate, estate.pools_by_name["gke-mig"])
    assert kubernetes_facts.PLUGIN_CONFIG_LABEL not in gke  # GKE runs its own device plugin


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("tier", True),
        ("estategen.io/pool", True),
        ("nvidia.com/mig.config", True),
        ("node.kubernetes.io/instance-type", True),
        ("kubelet.kubernetes.io/role", True),
        ("topology.kubernetes.io/zone", True),
        ("node-role.kubernetes.io/gpu", False),
        ("kubernetes.io/role", False),
        ("example.k8s.io/x", False),
    ],
)
def test_kubelet_may_set_follows_node_restriction(key: str, allowed: bool) -> None:
    assert kubernetes_facts.kubelet_may_set(key) is allowed


def test_program_builds_no_object_of_its_own() -> None:
    """Every object and label comes from the generator's manifests: the program names none."""
    program = (ROOT / "stacks" / "__main__.py").read_text()
    for name in (
        "ESTATE_LABEL",
        "MODEL_LABEL",
        "MIG_LABEL",
        "SWITCH_LABEL",
        "PLUGIN_CONFIG_LABEL",
        "MIG_CONFIG_LABEL",
        "MIG_DISABLED",
    ):
        assert getattr(kubernetes_facts, name) not in program, name
    assert "estategen.io/" not in program and "nvidia.com/" not in program


# --- MIG layouts, GRES, quotas ---------------------------------------------------------------


def gres_counts(gres_conf: str, host: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in gres_conf.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("Name") == "gpu" and host in fields.get("NodeName", ""):
            counts[fields["Type"]] = counts.get(fields["Type"], 0) + int(fields.get("Count", 1))
    return counts


@needs_ansible
def test_mig_counts_agree_in_gres_mig_parted_report_flavors_and_quotas(out: Path) -> None:
    estate = estate_of(TWINS)
    folder = rendered(TWINS, out / "twins")
    # gres.conf: instances of each profile on one Slurm node (8 GPUs)
    gres = (folder / "slurm" / "gres.conf").read_text()
    assert gres_counts(gres, "s-a100-[01-03]") == {p: 8 * n for p, n in LAYOUT.items()}
    # mig-parted as the nvidia_gpu role lays it down, on both schedulers' hosts
    for group in ("pool_mig_slurm", "pool_mig_k8s"):
        for text in templated(
            folder / "ansible", group, "nvidia_gpu/templates/mig-config.yaml.j2"
        ).values():
            layouts = yaml.safe_load(text)["mig-configs"]
            (device,) = layouts[group.removeprefix("pool_").replace("_", "-")]
            assert device["mig-devices"] == LAYOUT
    # mig-parted as the Pulumi program's ConfigMap carries it, and the flavours it registers
    run = run_project(folder / "pulumi" / "east")
    (configmap,) = [
        r.inputs
        for r in run.resources
        if r.type.endswith("ConfigMap") and r.name.endswith("mig-parted-config")
    ]
    (device,) = yaml.safe_load(configmap["data"]["config.yaml"])["mig-configs"]["mig-k8s"]
    assert device["mig-devices"] == LAYOUT
    cluster_queue: dict[str, Any] = next(
        r.inputs for r in run.resources if r.type.endswith(":ClusterQueue")
    )
    nominal = {
        f["name"]: int(r["nominalQuota"])
        for f in cluster_queue["spec"]["resourceGroups"][0]["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/mig-" + f["name"].removeprefix("a100-sxm-80gb-")
    }
    assert nominal == {
        "a100-sxm-80gb-1g.10gb": 4,
        "a100-sxm-80gb-2g.20gb": 0,
        "a100-sxm-80gb-3g.40gb": 2,
    }
    # the report's flavours and the checks' capacity: 2 nodes x 4 GPUs x the layout
    report_units = {f.key: f.units for f in build_report(estate).flavors}
    expected = {f"a100-sxm-80gb/{p}": 2 * 4 * n for p, n in LAYOUT.items()}
    assert report_units == expected
    assert kubernetes_facts.quota_capacity(estate, "east") == expected
    assert {f.key: f.units for f in kubernetes_facts.cluster_flavors(estate, "east")} == expected


def test_mig_layout_counts_profiles_whatever_their_order() -> None:
    estate = estate_of(TWINS)
    pool = estate.pools_by_name["mig-k8s"]
    assert facts.mig_layout(pool) == LAYOUT
    assert facts.gpu_gres(pool) == [(p, 4 * n) for p, n in LAYOUT.items()]
    assert facts.mig_instances_per_gpu(pool) == 4
    assert kubernetes_facts.quota_keys(pool) == [f"a100-sxm-80gb/{p}" for p in LAYOUT]


# --- mounts, storage classes, groups ---------------------------------------------------------


def test_mounts_and_storage_classes_agree_in_ansible_report_and_manifests(
    out: Path,
) -> None:
    source = str(BLUEPRINTS / "campus.yaml")
    estate = estate_of(Path(source).read_text())
    folder = rendered(source, out / "campus-storage")
    report = build_report(estate)
    for pool in estate.node_pools:
        mounts = [s.mount for s in facts.pool_mounts(estate, pool)]
        (shown,) = [p for p in report.pools if p.pool.name == pool.name]
        assert list(shown.storage) == mounts
        group_vars = folder / "ansible" / "group_vars" / f"{facts.pool_group(pool.name)}.yml"
        if not pool.managed:
            names = yaml.safe_load(group_vars.read_text())["pool_storage"]
            assert names == [s.name for s in facts.pool_mounts(estate, pool)]
        else:
            assert not group_vars.exists()
    for cluster in estate.kubernetes_clusters:
        manifest = folder / "kubernetes" / cluster.name / "storage.yaml"
        objects = list(yaml.safe_load_all(manifest.read_text())) if manifest.exists() else []
        names = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "StorageClass")
        assert names == facts.storage_class_names(estate, cluster.name)
    assert facts.storage_class_names(estate, "serving") == ["scratch"]


# --- one definition --------------------------------------------------------------------------

# Names that computed a fact in more than one place before facts.py: none may be defined (as a
# function or a module constant) anywhere but its one home (HOMES).
FORMER_COPIES = {
    "_node_labels",
    "node_labels",
    "switch_of",
    "mig_parted_config",
    "gpu_gres",
    "gres_type",
    "mig_layout",
    "replicas",
    "node_count",
    "instances_per_gpu",
    "quota_keys",
    "quota_capacity",
    "cluster_flavors",
    "group_name",
    "_host_budget",
    "mounts",
    "offered_storage_classes",
    "_taint",
}


# Kubernetes nodes' facts live in kubernetes_facts.py, the others in facts.py
KUBERNETES_FACTS = {"node_labels", "quota_keys", "quota_capacity", "cluster_flavors"}

# Other shared names and the one module that defines each.
HOMES = {
    name: "kubernetes_facts.py" if name in KUBERNETES_FACTS else "facts.py"
    for name in FORMER_COPIES
} | {
    "MANIFEST": "output.py",
    "host_budget": "names.py",  # estategen/checks/names.py
    # a host's own labels: the inventory and the Node patches read the same runs
    "host_label_runs": "kubernetes_facts.py",
    "HostLabelRun": "kubernetes_facts.py",
    # Slurm's default ports are schema defaults too, and the schema sits below the facts
    "SLURMD_PORT": "slurm.py",  # estategen/model/slurm.py
    "SLURMCTLD_PORT": "slurm.py",
}


def test_former_copies_of_a_fact_are_defined_only_in_facts() -> None:
    sources = [*(ROOT / "generator" / "estategen").rglob("*.py"), ROOT / "stacks" / "__main__.py"]
    found = []
    for path in sources:
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            found += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n in HOMES and path.name != HOMES[n]
            ]
    assert found == []
    planned = [ast.parse(p.read_text()) for p in (ROOT / "generator/estategen/plan").glob("*.py")]
    assert "_group" not in {
        n.name for tree in planned for n in tree.body if isinstance(n, ast.FunctionDef)
    }
    defined = {
        n.name
        for module in ("facts.py", "kubernetes_facts.py")
        for n in ast.parse((ROOT / "generator/estategen" / module).read_text()).body
        if isinstance(n, ast.FunctionDef)
    }
    assert {"node_labels", "gpu_gres", "mig_layout", "quota_capacity", "group_name"} <= defined


@pytest.mark.parametrize(
    ("pools", "plugin"),
    [
        ([((), ()), ((), ())], None),
        ([((), ("leaf-a",)), ((), ())], "tree"),
        ([((), ("leaf-a",)), (("block-1",), ())], "block"),
    ],
)
def test_topology_plugin_is_block_over_tree_over_none(
    pools: list[tuple[tuple[str, ...], tuple[str, ...]]], plugin: str | None
) -> None:
    assert facts.topology_plugin(pools) == plugin


@pytest.mark.parametrize("name", ["lab.yaml", "campus.yaml", "frontier.yaml"])
def test_plan_and_slurm_conf_agree_on_the_topology_plugin(name: str) -> None:
    """plan's restart rule (slurm-topology-plugin) follows the plugin slurm.conf names."""
    estate = pipeline.validate_file(BLUEPRINTS / name).estate
    files = render(estate)
    conf = files["slurm/slurm.conf"].content.decode().splitlines()
    written = next((ln.split("=", 1)[1] for ln in conf if ln.startswith("TopologyPlugin=")), None)
    recorded = estatediff.recorded(files["estate.json"].content)
    assert isinstance(recorded, dict), recorded
    from estategen.plan.models import Models

    planned = Models(recorded, recorded, estate).topology(recorded)
    assert written == (f"topology/{planned}" if planned else None)
