"""Tenancy in a Kubernetes cluster: what a team may do in its namespace, and nowhere else.

A blueprint fragment in (``ESTATE`` below, or the example blueprints), the rendered
``kubernetes/<cluster>/`` objects and example jobs out. A team namespace enforces a Pod Security
Standards level (``kubernetes.clusters[].tenancy.pod_security``), and every pod template
estategen renders into one passes that level, checked against the standard's own table
(``pss_violations``), not against what the generator writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pytest
import yaml

from estategen import load, pipeline
from estategen.errors import BlueprintInvalid
from estategen.model import Estate
from estategen.output import Files
from estategen.render import render

from conftest import BLUEPRINTS
from crd import UPSTREAM, crd_files
from k8s_harness import ALL_PROJECTS, MESA, STORAGE_ESTATE, source_of

Obj = dict[str, Any]
PSA = "pod-security.kubernetes.io"
RBAC = "rbac.authorization.k8s.io"

# Two clusters, one of each queue engine with every framework it runs examples for; the
# on-prem one keeps the default level, the other lowers it to baseline.
ESTATE = """\
estate: tenancy
versions: {slurm: "24.05", kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}, {name: ben, uid: 11002}]
  teams:
    - {name: vision, gid: 21001, members: [ana]}
    - {name: nlp, gid: 21002, members: [ben], namespace: nlp-prod}
    - {name: ops, gid: 21003}
node_pools:
  - name: l40s
    scheduler: kubernetes
    cluster: kq
    hosts: "k8s-l40s-[01-02]"
    gpus: {model: l40s-48gb, count: 4}
  - name: h100
    scheduler: kubernetes
    cluster: vc
    hosts: "k8s-h100-[01-02]"
    gpus: {model: h100-sxm-80gb, count: 8}
kubernetes:
  clusters:
    - name: kq
      frameworks: [job, jobset, trainjob]
      queues:
        cohort: kq
        teams:
          - {team: vision, quota: {l40s-48gb: 4}}
          - {team: ops, quota: {l40s-48gb: 4}}
    - name: vc
      frameworks: [job, jobset, mpijob, rayjob]
      tenancy: {pod_security: baseline}
      queues:
        engine: volcano
        teams:
          - {team: nlp, quota: {h100-sxm-80gb: 8}}
"""


# ESTATE with a level of its own for two teams: ops looser than kq's restricted, vision
# stricter than vc's baseline; nlp keeps each cluster's
TEAM_LEVELS = ESTATE.replace(
    "    - {name: vision, gid: 21001, members: [ana]}\n",
    "    - {name: vision, gid: 21001, members: [ana], pod_security: restricted}\n",
).replace(
    "    - {name: ops, gid: 21003}\n", "    - {name: ops, gid: 21003, pod_security: baseline}\n"
)


@cache
def rendered(source: str) -> tuple[Estate, Files]:
    text = (BLUEPRINTS / source).read_text() if source.endswith(".yaml") else source
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    estate = pipeline.validate_document(document).estate
    return estate, render(estate)


def applied(source: str, cluster: str) -> list[Obj]:
    """The objects ``kubectl apply -k kubernetes/<cluster>`` applies."""
    _, files = rendered(source)
    base = f"kubernetes/{cluster}"
    kustomization = yaml.safe_load(files[f"{base}/kustomization.yaml"].content)
    return [
        obj
        for name in kustomization["resources"]
        for obj in yaml.safe_load_all(files[f"{base}/{name}"].content)
        if obj
    ]


def examples(source: str, cluster: str) -> list[Obj]:
    _, files = rendered(source)
    prefix = f"kubernetes/{cluster}/examples/"
    return [
        obj
        for path in sorted(files)
        if path.startswith(prefix)
        for obj in yaml.safe_load_all(files[path].content)
        if obj
    ]


def team_namespaces(source: str, cluster: str) -> dict[str, Obj]:
    estate, _ = rendered(source)
    ours = {t.namespace for t in estate.identity.teams}
    return {
        o["metadata"]["name"]: o
        for o in applied(source, cluster)
        if o["kind"] == "Namespace" and o["metadata"]["name"] in ours
    }


def clusters(source: str) -> list[str]:
    estate, _ = rendered(source)
    return [c.name for c in estate.kubernetes_clusters]


# every example blueprint's clusters, the frontier's (every framework on both engines) and ESTATE
EVERY_CLUSTER = sorted(
    {(source_of(b) if b.endswith(".yaml") else b, c) for b, c in ALL_PROJECTS}
    | {("frontier.yaml", c) for c in clusters("frontier.yaml")}
    | {(ESTATE, c) for c in clusters(ESTATE)}
    | {(TEAM_LEVELS, c) for c in clusters(TEAM_LEVELS)},
    key=lambda pair: (pair[0] == MESA, pair[0] == ESTATE, pair[0] == TEAM_LEVELS, pair),
)
_SOURCE_IDS = {MESA: "mesa", ESTATE: "tenancy", TEAM_LEVELS: "team-levels"}
IDS = [f"{_SOURCE_IDS.get(s) or Path(s).stem}-{c}" for s, c in EVERY_CLUSTER]


# --- the Pod Security Standards, from their table ------------------------------------------
# kubernetes.io/docs/concepts/security/pod-security-standards (the policy levels as of v1.33).

# Baseline, "Capabilities": what a container may add
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
}
# Baseline, "SELinux": the types a pod or container may ask for
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
# Baseline, "Sysctls": the safe set
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
# Restricted, "Volume Types": the only volume sources allowed
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def _containers(pod: Obj) -> list[Obj]:
    return [
        *pod.get("containers", []),
        *pod.get("initContainers", []),
        *pod.get("ephemeralContainers", []),
    ]


def _baseline(pod: Obj) -> Iterator[str]:
    security = pod.get("securityContext") or {}
    containers = _containers(pod)
    contexts = [security] + [c.get("securityContext") or {} for c in containers]
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            yield f"Host Namespaces: {key}"
    for context in contexts:
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            yield "HostProcess"
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield "Seccomp: Unconfined"
        apparmor = (context.get("appArmorProfile") or {}).get("type")
        if apparmor not in (None, "RuntimeDefault", "Localhost"):
            yield f"AppArmor: {apparmor}"
        selinux = context.get("seLinuxOptions") or {}
        if (
            selinux.get("type", "") not in SELINUX_TYPES
            or selinux.get("user")
            or selinux.get("role")
        ):
            yield f"SELinux: {selinux}"
    for container in containers:
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            yield f"Privileged Containers: {container['name']}"
        added = set((context.get("capabilities") or {}).get("add", []))
        if added - BASELINE_CAPABILITIES:
            yield f"Capabilities: {container['name']} adds {sorted(added - BASELINE_CAPABILITIES)}"
        if context.get("procMount", "Default") != "Default":
            yield f"/proc Mount Type: {container['name']}"
        for port in container.get("ports", []):
            if port.get("hostPort", 0):
                yield f"Host Ports: {container['name']}"
    for volume in pod.get("volumes", []):
        if "hostPath" in volume:
            yield f"HostPath Volumes: {volume['name']}"
    for sysctl in security.get("sysctls", []):
        if sysctl["name"] not in SAFE_SYSCTLS:
            yield f"Sysctls: {sysctl['name']}"


def _restricted(pod: Obj) -> Iterator[str]:
    yield from _baseline(pod)
    security = pod.get("securityContext") or {}
    containers = _containers(pod)
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if kinds - RESTRICTED_VOLUMES:
            yield f"Volume Types: {volume['name']} is {sorted(kinds)}"
    pod_seccomp = (security.get("seccompProfile") or {}).get("type")
    for container in containers:
        context = container.get("securityContext") or {}
        name = container["name"]
        if context.get("allowPrivilegeEscalation") is not False:
            yield f"Privilege Escalation: {name}"
        non_root = context.get("runAsNonRoot", security.get("runAsNonRoot"))
        if non_root is not True:
            yield f"Running as Non-root: {name}"
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            yield f"Seccomp: {name}"
        capabilities = context.get("capabilities") or {}
        if "ALL" not in capabilities.get("drop", []):
            yield f"Capabilities: {name} does not drop ALL"
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            yield f"Capabilities: {name} adds more than NET_BIND_SERVICE"
    for context in [security] + [c.get("securityContext") or {} for c in containers]:
        if context.get("runAsUser") == 0:
            yield "Running as Non-root user: runAsUser 0"


def pss_violations(pod: Obj, level: str) -> list[str]:
    """What the Pod Security Standards' ``level`` refuses in a pod spec."""
    if level == "privileged":
        return []
    return list(_restricted(pod) if level == "restricted" else _baseline(pod))


# --- where pod templates are ---------------------------------------------------------------

# the pod spec Kubeflow Trainer's torch-distributed runtime gives a TrainJob's nodes: one
# replicated job "node" with one container "node" and no securityContext or volumes
# (charts/kubeflow-trainer/files/runtimes/torch-distributed.yaml, v2.3.0)
TORCH_DISTRIBUTED_POD: Obj = {"containers": [{"name": "node", "image": "pytorch/pytorch"}]}


def _trainjob_pod(job: Obj) -> Obj:
    """The pod a TrainJob's nodes run: the runtime's, with the TrainJob's runtimePatches merged
    into it as Trainer does (pkg/runtime/core/trainingruntime.go, mergeRuntimePatches: a
    strategic merge, containers by name)."""
    pod: Obj = yaml.safe_load(yaml.safe_dump(TORCH_DISTRIBUTED_POD))
    for patch in job["spec"].get("runtimePatches", []):
        jobs = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        for replicated in jobs:
            if replicated["name"] != "node":
                continue
            spec = replicated["template"]["spec"]["template"]["spec"]
            if "securityContext" in spec:
                pod["securityContext"] = {
                    **pod.get("securityContext", {}),
                    **spec["securityContext"],
                }
            for patched in spec.get("containers", []):
                for container in pod["containers"]:
                    if container["name"] == patched["name"]:
                        container.update({k: v for k, v in patched.items() if k != "name"})
    return pod


def argo_executor(source: str, cluster: str) -> Obj:
    """The securityContext the cluster's Argo Workflows controller gives its executor's
    containers: the rendered chart values' ``executor.securityContext`` (none without it)."""
    _, files = rendered(source)
    path = f"kubernetes/{cluster}/helm/argo-workflows.values.yaml"
    if path not in files:
        return {}
    values = yaml.safe_load(files[path].content)
    context: Obj = (values.get("executor") or {}).get("securityContext") or {}
    return context


def _workflow_pods(workflow: Obj, executor: Obj) -> Iterator[Obj]:
    """The pod Argo Workflows v4.0.6 makes for each container template of a Workflow
    (workflow/controller/workflowpod.go createWorkflowPod): the Workflow's
    ``spec.securityContext`` as the pod's (addSchedulingConstraints), the executor's ``init``
    and ``wait`` containers with the controller's ``executor.securityContext``
    (newExecContainer), and the template's container as ``main``."""
    spec = workflow["spec"]
    for template in spec["templates"]:
        if "container" not in template:
            continue
        pod: Obj = {
            "initContainers": [{"name": "init", "securityContext": executor}],
            "containers": [
                {"name": "wait", "securityContext": executor},
                {**template["container"], "name": "main"},
            ],
        }
        if "securityContext" in spec:
            pod["securityContext"] = spec["securityContext"]
        yield pod


def pod_templates(obj: Obj, executor: Obj | None = None) -> Iterator[Obj]:
    """Every pod spec an object makes pods from: a Pod's own, a template's, a TrainJob's, a
    Workflow's (with ``executor``, the Argo controller's securityContext for its own
    containers)."""
    if obj["kind"] == "TrainJob":
        yield _trainjob_pod(obj)
        return
    if obj["kind"] == "Workflow":
        assert executor is not None, "a Workflow's pods need the executor's securityContext"
        yield from _workflow_pods(obj, executor)
        return
    if obj["kind"] == "Pod":
        yield obj["spec"]
        return

    def walk(node: Any) -> Iterator[Obj]:
        if isinstance(node, dict):
            if "containers" in node and isinstance(node["containers"], list):
                yield node
                return
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    yield from walk(obj.get("spec"))


# --- Pod Security --------------------------------------------------------------------------


def test_team_namespaces_enforce_the_clusters_level_pinned_to_the_kubernetes_minor() -> None:
    """kubernetes.io/docs/concepts/security/pod-security-admission: a namespace's
    ``pod-security.kubernetes.io/<mode>`` label names the level, ``<mode>-version`` the
    Kubernetes minor whose checks apply (pinned, as "Enforce Pod Security Standards with
    Namespace Labels" recommends, so an upgrade does not change them). ``restricted`` unless
    the cluster says ``tenancy: {pod_security: baseline}``; ``warn`` says the same."""
    for cluster, level in (("kq", "restricted"), ("vc", "baseline")):
        namespaces = team_namespaces(ESTATE, cluster)
        assert set(namespaces) == {"vision", "nlp-prod", "ops"}
        for namespace in namespaces.values():
            labels = namespace["metadata"]["labels"]
            for mode in ("enforce", "warn"):
                assert labels[f"{PSA}/{mode}"] == level
                assert labels[f"{PSA}/{mode}-version"] == "v1.33"


def test_a_privileged_or_unknown_level_is_refused_with_the_levels_allowed() -> None:
    """privileged would let a team's pod use its node's namespaces and paths, and so reach
    every other team's: only restricted and baseline are offered."""
    for level in ("privileged", "Restricted"):
        text = ESTATE.replace("pod_security: baseline", f"pod_security: {level}")
        document = load.parse_blueprint(text.encode(), "blueprint.yaml")
        with pytest.raises(BlueprintInvalid) as failed:
            pipeline.validate_document(document)
        messages = [f"{f.path}: {f.message}" for f in failed.value.findings]
        assert any(
            m.startswith("kubernetes.clusters[1].tenancy.pod_security:")
            and "restricted" in m
            and "baseline" in m
            for m in messages
        ), messages


def test_a_teams_level_labels_its_namespace_on_every_cluster_others_keep_the_clusters() -> None:
    """kubernetes.io/docs/concepts/security/pod-security-admission (kubernetes/website,
    content/en/docs/concepts/security/pod-security-admission.md, "Pod Security Admission labels
    for namespaces"): the level is a label of each namespace, so one team's can differ from
    the rest of its cluster. ``identity.teams[].pod_security`` gives the team's namespace its
    level on every cluster, looser (ops: baseline where kq enforces restricted) or stricter
    (vision: restricted where vc enforces baseline), each mode's version still pinned; a team
    without one (nlp) keeps each cluster's level."""
    expected = {
        "kq": {"vision": "restricted", "nlp-prod": "restricted", "ops": "baseline"},
        "vc": {"vision": "restricted", "nlp-prod": "baseline", "ops": "baseline"},
    }
    for cluster, levels in expected.items():
        namespaces = team_namespaces(TEAM_LEVELS, cluster)
        for name, level in levels.items():
            labels = namespaces[name]["metadata"]["labels"]
            for mode in ("enforce", "warn"):
                assert labels[f"{PSA}/{mode}"] == level, (cluster, name, mode)
                assert labels[f"{PSA}/{mode}-version"] == "v1.33"


def test_a_teams_level_is_recorded_and_read_back_by_the_plan() -> None:
    """estate.json records a team's own level (the plan compares it), and only where the
    blueprint sets one: the examples' estate.json keep their bytes."""
    from estategen.recorded import estate_from_data
    from estategen.renderers.estate_json import estate_data

    estate, _ = rendered(TEAM_LEVELS)
    teams = {t["name"]: t for t in estate_data(estate)["identity"]["teams"]}
    assert teams["ops"]["pod_security"] == "baseline"
    assert "pod_security" not in teams["nlp"]
    again = estate_from_data(estate_data(estate))
    assert [t.pod_security for t in again.identity.teams] == ["restricted", None, "baseline"]


PRIVILEGED = ESTATE.replace(
    "    - {name: ops, gid: 21003}\n", "    - {name: ops, gid: 21003, pod_security: privileged}\n"
).replace("    - name: kq\n", "    - name: kq\n      tenancy: {unix_identity: true}\n")


def test_a_privileged_team_is_labelled_so_warned_of_and_the_warning_may_be_silenced() -> None:
    """kubernetes.io/docs/concepts/security/pod-security-standards: privileged is the
    unrestricted level. A team may have it by name, never a whole cluster: its namespace is
    labelled privileged on every cluster, and validate warns at the team's key (what the
    warning says: tests/checks/test_kubernetes.py); a site that gave the team nodes of its own
    may silence the rule."""
    document = load.parse_blueprint(PRIVILEGED.encode(), "blueprint.yaml")
    findings = pipeline.validate_document(document).findings
    (warning,) = [f for f in findings if f.rule == "check/team-pod-security-privileged"]
    assert (warning.path, warning.level) == ("identity.teams[2].pod_security", "warning")
    silenced = pipeline.validate_document(document, ["check/team-pod-security-privileged"])
    assert [f.rule for f in silenced.suppressed] == ["check/team-pod-security-privileged"]
    for cluster in ("kq", "vc"):
        labels = team_namespaces(PRIVILEGED, cluster)["ops"]["metadata"]["labels"]
        assert labels[f"{PSA}/enforce"] == labels[f"{PSA}/warn"] == "privileged"
    document = load.parse_blueprint(TEAM_LEVELS.encode(), "blueprint.yaml")
    rules = {f.rule for f in pipeline.validate_document(document).findings}
    assert "check/team-pod-security-privileged" not in rules


def test_a_teams_unknown_level_is_refused_at_its_key_with_the_levels_allowed() -> None:
    for level in ("Baseline", "root", "''"):
        text = TEAM_LEVELS.replace("pod_security: baseline}", f"pod_security: {level}}}")
        document = load.parse_blueprint(text.encode(), "blueprint.yaml")
        with pytest.raises(BlueprintInvalid) as failed:
            pipeline.validate_document(document)
        messages = [f"{f.path}: {f.message}" for f in failed.value.findings]
        assert any(
            m.startswith("identity.teams[2].pod_security:")
            and "restricted, baseline, privileged" in m
            for m in messages
        ), messages


@pytest.mark.parametrize(("source", "cluster"), EVERY_CLUSTER, ids=IDS)
def test_every_pod_template_in_a_team_namespace_passes_its_namespaces_level(
    source: str, cluster: str
) -> None:
    """kubernetes.io/docs/concepts/security/pod-security-standards: Pod Security admission
    refuses a pod its namespace's level does not allow; for a Job, JobSet, TrainJob or
    Volcano Job that is every pod its controller makes, long after the object was accepted.
    So every pod template estategen renders into a team namespace (applied objects and the
    example jobs, a TrainJob's as Trainer merges its runtimePatches into its runtime) passes
    the namespace's own level (the team's, where ``identity.teams[].pod_security`` sets one:
    ``team-levels-*``), as the standard's table states each control. What the controllers
    add to those pods keeps it: Volcano's job plugins (pkg/controllers/job/plugins, v1.15.1:
    svc, ssh, pytorch, mpi, ray) add environment, ports, hostnames and ConfigMap or Secret
    volumes, no host namespace, path or port, capability or securityContext; Argo Workflows
    adds its executor's containers with the securityContext the chart's values give them."""
    namespaces = team_namespaces(source, cluster)
    executor = argo_executor(source, cluster)
    checked = 0
    for obj in applied(source, cluster) + examples(source, cluster):
        namespace = obj["metadata"].get("namespace")
        if namespace not in namespaces:
            continue
        level = namespaces[namespace]["metadata"]["labels"][f"{PSA}/enforce"]
        for pod in pod_templates(obj, executor):
            assert pss_violations(pod, level) == [], (obj["kind"], obj["metadata"]["name"])
            checked += 1
    # each example makes pods: none is skipped for want of a template found
    assert checked >= len(examples(source, cluster))


def test_the_check_refuses_what_the_standard_refuses() -> None:
    """The check above is not vacuous: the default pod (root, no seccomp, escalation allowed)
    fails restricted and passes baseline; a hostPath volume or the host network fails both."""
    plain: Obj = {"containers": [{"name": "c", "image": "busybox"}]}
    assert set(pss_violations(plain, "restricted")) == {
        "Privilege Escalation: c",
        "Running as Non-root: c",
        "Seccomp: c",
        "Capabilities: c does not drop ALL",
    }
    assert pss_violations(plain, "baseline") == []
    host = {**plain, "hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    assert "HostPath Volumes: h" in pss_violations(host, "baseline")
    assert "Host Namespaces: hostNetwork" in pss_violations(host, "baseline")


def test_example_pods_run_as_a_team_member_in_the_teams_unix_group() -> None:
    """A batch job on the Slurm side runs as its user in the team's group; the examples' pods
    run as the team's first member (``nobody``, 65534, for a team without members) with the
    team's GID, so files they write on a shared file system belong to the team."""
    by_namespace = {}
    for cluster in ("kq", "vc"):
        for obj in examples(ESTATE, cluster):
            for pod in pod_templates(obj):
                context = pod["securityContext"]
                by_namespace[obj["metadata"]["namespace"]] = (
                    context["runAsUser"],
                    context["runAsGroup"],
                )
    assert by_namespace == {
        "vision": (11001, 21001),
        "nlp-prod": (11002, 21002),
        "ops": (65534, 21003),
    }


# --- RBAC ----------------------------------------------------------------------------------

OIDC = ESTATE.replace(
    "      tenancy: {pod_security: baseline}\n",
    "      tenancy: {pod_security: baseline, group: 'oidc:{team}'}\n",
)


def bindings(source: str, cluster: str) -> list[Obj]:
    return [
        o for o in applied(source, cluster) if o["kind"] in ("RoleBinding", "ClusterRoleBinding")
    ]


def test_each_team_namespace_lets_the_teams_group_edit_it_and_run_its_job_kinds() -> None:
    """kubernetes.io/docs/reference/access-authn-authz/rbac (User-facing roles; RoleBinding):
    a RoleBinding to a ClusterRole grants it in the binding's namespace only. Each team
    namespace binds the team's group (its Unix group on the Slurm side, as ``tenancy.group``
    spells it for the cluster's authenticator: ``{team}`` unless said otherwise, ``oidc:{team}``
    here) to ``edit`` and to ``estategen-team-jobs``, the cluster's job kinds."""
    estate, _ = rendered(OIDC)
    for cluster, spelled in (("kq", "{}"), ("vc", "oidc:{}")):
        teams = team_namespaces(OIDC, cluster)
        found: dict[str, set[tuple[str, str, str, str]]] = {}
        for b in bindings(OIDC, cluster):
            if b["metadata"].get("namespace") in teams:
                (subject,) = b["subjects"]
                assert (b["roleRef"]["apiGroup"], b["roleRef"]["kind"]) == (RBAC, "ClusterRole")
                assert (subject["apiGroup"], subject["kind"]) == (RBAC, "Group")
                entry = (b["metadata"]["name"], b["roleRef"]["name"], subject["name"], "")
                found.setdefault(b["metadata"]["namespace"], set()).add(entry)
        assert found == {
            team.namespace: {
                ("team-edit", "edit", spelled.format(team.name), ""),
                ("team-jobs", "estategen-team-jobs", spelled.format(team.name), ""),
            }
            for team in estate.identity.teams
        }


def granted(source: str, cluster: str) -> dict[tuple[str, str], list[str]]:
    """The ``estategen-team-jobs`` ClusterRole's verbs, by (API group, resource)."""
    (role,) = [
        o
        for o in applied(source, cluster)
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "estategen-team-jobs"
    ]
    out = {}
    for rule in role["rules"]:
        for resource in rule["resources"]:
            out[(rule["apiGroups"][0], resource)] = rule["verbs"]
    return out


def test_the_job_kinds_role_grants_what_each_cluster_runs_and_nothing_cluster_wide() -> None:
    """``edit`` covers Pods and batch Jobs, not the kinds the frameworks' operators and the queue
    engine add (no pinned chart aggregates them into edit): the team writes those its cluster
    runs and reads its LocalQueue and Workloads (Kueue) or PodGroups (Volcano). Every resource
    is one a namespace holds: where the pinned CRD is vendored (JobSet, Trainer, Kueue,
    Volcano), it is that CRD's plural with ``scope: Namespaced`` (a RoleBinding could not grant
    a cluster-scoped one anyway); MPIJob's and KubeRay's CRDs are not vendored."""
    scope: dict[tuple[str, str], str] = {}
    for folder in ("jobset-v0.12.0", "trainer-v2.3.0", "kueue-v0.19.2", "volcano-v1.15.1"):
        for path in crd_files(UPSTREAM / folder):
            crd = yaml.safe_load(path.read_text())["spec"]
            scope[(crd["group"], crd["names"]["plural"])] = crd["scope"]

    write = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    kq, vc = granted(ESTATE, "kq"), granted(ESTATE, "vc")
    assert {k for k, verbs in kq.items() if verbs == write} == {
        ("jobset.x-k8s.io", "jobsets"),
        ("trainer.kubeflow.org", "trainjobs"),
    }
    assert {k for k, verbs in vc.items() if verbs == write} == {
        ("jobset.x-k8s.io", "jobsets"),
        ("kubeflow.org", "mpijobs"),
        ("ray.io", "rayjobs"),
        ("ray.io", "rayclusters"),
        ("batch.volcano.sh", "jobs"),
    }
    assert kq[("kueue.x-k8s.io", "localqueues")] == ["get", "list", "watch"]
    assert vc[("scheduling.volcano.sh", "podgroups")] == ["get", "list", "watch"]
    checked = set()
    for group, resource in [*kq, *vc]:
        plural = resource.partition("/")[0]
        if (group, plural) in scope:
            assert scope[(group, plural)] == "Namespaced", (group, resource)
            checked.add((group, plural))
    assert checked == {
        ("jobset.x-k8s.io", "jobsets"),
        ("trainer.kubeflow.org", "trainjobs"),
        ("kueue.x-k8s.io", "localqueues"),
        ("batch.volcano.sh", "jobs"),
    }


# both clusters run Argo Workflows too
WORKFLOWS = ESTATE.replace(
    "frameworks: [job, jobset, trainjob]", "frameworks: [job, jobset, trainjob, workflow]"
).replace(
    "frameworks: [job, jobset, mpijob, rayjob]",
    "frameworks: [job, jobset, mpijob, rayjob, workflow]",
)
WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def test_the_team_role_lets_a_team_run_argo_workflows_where_its_cluster_runs_them() -> None:
    """The Argo Workflows chart's aggregated roles are off (they would add Argo's kinds to
    ``edit`` in every namespace), so ``estategen-team-jobs`` grants a team its Workflows,
    WorkflowTemplates and CronWorkflows, in its namespace, only on a cluster that names
    ``workflow``. The Workflow CRD the chart installs (charts/argo-workflows/files/crds/full
    at argo-workflows-1.0.18, vendored) is namespaced and has no status subresource (the
    controller keeps status in the object), so no ``workflows/status`` is granted."""
    (crd,) = crd_files(UPSTREAM / "argo-workflows-1.0.18")
    workflows = yaml.safe_load(crd.read_text())
    assert workflows["spec"]["scope"] == "Namespaced"
    assert workflows["spec"]["names"]["plural"] == "workflows"
    assert not workflows["spec"]["versions"][0].get("subresources")
    for cluster in ("kq", "vc"):
        role = granted(WORKFLOWS, cluster)
        for kind in ("workflows", "workflowtemplates", "cronworkflows"):
            assert role[("argoproj.io", kind)] == WRITE, (cluster, kind)
        assert ("argoproj.io", "workflows/status") not in role
        assert not [key for key in granted(ESTATE, cluster) if key[0] == "argoproj.io"]


def test_each_team_namespace_has_a_service_account_argos_executor_can_report_with() -> None:
    """A Workflow's pods run as ``spec.serviceAccountName``, and Argo's executor needs it to
    create and patch WorkflowTaskResults, where it reports each step's outputs
    (argo-workflows v4.0.6 docs/workflow-rbac.md; the chart's own Role,
    charts/argo-workflows/templates/controller/workflow-role.yaml at argo-workflows-1.0.18,
    grants the same and is turned off). Each team namespace gets the service account
    ``argo-workflow`` bound to a Role granting exactly that, in its own namespace, and the
    team's example Workflow runs as it. None on a cluster without ``workflow``."""
    estate, _ = rendered(WORKFLOWS)
    for cluster in ("kq", "vc"):
        objects = applied(WORKFLOWS, cluster)
        for team in estate.identity.teams:
            ns = team.namespace
            here = {(o["kind"], o["metadata"]["name"]): o for o in objects
                    if o["metadata"].get("namespace") == ns}  # fmt: skip
            assert ("ServiceAccount", "argo-workflow") in here
            role = here[("Role", "argo-workflow-executor")]
            assert role["rules"] == [
                {
                    "apiGroups": ["argoproj.io"],
                    "resources": ["workflowtaskresults"],
                    "verbs": ["create", "patch"],
                }
            ]
            binding = here[("RoleBinding", "argo-workflow-executor")]
            assert binding["roleRef"] == {
                "apiGroup": RBAC,
                "kind": "Role",
                "name": "argo-workflow-executor",
            }
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": "argo-workflow", "namespace": ns}
            ]
        for workflow in [o for o in examples(WORKFLOWS, cluster) if o["kind"] == "Workflow"]:
            assert workflow["spec"]["serviceAccountName"] == "argo-workflow"
        names = {(o["kind"], o["metadata"]["name"]) for o in applied(ESTATE, cluster)}
        assert not {("ServiceAccount", "argo-workflow"), ("Role", "argo-workflow-executor")} & names


def test_the_example_workflows_pods_pass_the_namespaces_level_with_argos_own_containers() -> None:
    """Pod Security admission checks every container of a pod, Argo's executor ``init`` and
    ``wait`` too (argo-workflows v4.0.6 workflowpod.go newExecContainer gives them the
    controller's ``executor.securityContext``): with the chart's default, ``{}``, restricted
    refuses them; with the rendered values it admits the whole pod."""
    namespaces = team_namespaces(WORKFLOWS, "kq")
    executor = argo_executor(WORKFLOWS, "kq")
    found = [o for o in examples(WORKFLOWS, "kq") if o["kind"] == "Workflow"]
    assert found
    for workflow in found:
        namespace = namespaces[workflow["metadata"]["namespace"]]
        assert namespace["metadata"]["labels"][f"{PSA}/enforce"] == "restricted"
        for pod in pod_templates(workflow, executor):
            assert pss_violations(pod, "restricted") == []
        for pod in pod_templates(workflow, {}):
            assert "Privilege Escalation: wait" in pss_violations(pod, "restricted")


@pytest.mark.parametrize(("source", "cluster"), EVERY_CLUSTER, ids=IDS)
def test_no_binding_gives_a_team_another_teams_namespace(source: str, cluster: str) -> None:
    """A team's group is bound in its own namespace and nowhere else: no RoleBinding in another
    team's namespace names it, and no ClusterRoleBinding (which would reach every namespace)
    does."""
    estate, _ = rendered(source)
    model = next(c for c in estate.kubernetes_clusters if c.name == cluster)
    group_of = {model.team_group(t.name): t.namespace for t in estate.identity.teams}
    seen = set()
    for binding in bindings(source, cluster):
        for subject in binding.get("subjects", []):
            if subject["kind"] != "Group" or subject["name"] not in group_of:
                continue
            assert binding["kind"] == "RoleBinding", binding["metadata"]
            assert binding["metadata"]["namespace"] == group_of[subject["name"]]
            seen.add(subject["name"])
    assert seen == set(group_of)


@pytest.mark.parametrize("group", ["oidc:team", "{team}{team}", "{team} admins", "{Team}"])
def test_a_group_that_does_not_name_the_team_once_is_refused(group: str) -> None:
    """Without ``{team}`` exactly once every team would get one group, or a name the
    authenticator cannot give: refused, saying what a group looks like."""
    text = ESTATE.replace("pod_security: baseline", f"pod_security: baseline, group: '{group}'")
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    with pytest.raises(BlueprintInvalid) as failed:
        pipeline.validate_document(document)
    messages = [f"{f.path}: {f.message}" for f in failed.value.findings]
    assert any(
        m.startswith("kubernetes.clusters[1].tenancy.group:") and "'{team}' once" in m
        for m in messages
    ), messages


# --- NetworkPolicy -------------------------------------------------------------------------

NAMESPACE_NAME = "kubernetes.io/metadata.name"


def _selects(selector: Obj, labels: dict[str, str]) -> bool:
    """A label selector (matchLabels and matchExpressions) against labels; {} selects all."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values")
        present = key in labels
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def ingress_allowed(
    policies: list[Obj],
    namespaces: dict[str, dict[str, str]],
    source: tuple[str, dict[str, str]],
    target: tuple[str, dict[str, str]],
    port: int,
) -> bool:
    """Whether a TCP connection from a pod (namespace, labels) to another on ``port`` is let in,
    as kubernetes.io/docs/concepts/services-networking/network-policies states it: a pod no
    Ingress policy selects takes every connection; a selected pod only those some rule of a
    selecting policy allows, a rule without ``from`` allowing every source and one without
    ``ports`` every port; a peer with only a podSelector means pods of the policy's own
    namespace, with a namespaceSelector pods of the namespaces it selects (by their labels,
    ``kubernetes.io/metadata.name`` among them)."""
    (source_ns, source_labels), (target_ns, target_labels) = source, target
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == target_ns
        and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        and _selects(p["spec"]["podSelector"], target_labels)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress") or []:
            ports = rule.get("ports")
            if ports and not any(
                p.get("protocol", "TCP") == "TCP" and p.get("port") in (None, port) for p in ports
            ):
                continue
            peers = rule.get("from")
            if not peers:
                return True
            for peer in peers:
                if "ipBlock" in peer:
                    continue
                if "namespaceSelector" in peer:
                    namespace_ok = _selects(peer["namespaceSelector"], namespaces[source_ns])
                else:
                    namespace_ok = source_ns == target_ns
                pod_ok = _selects(peer.get("podSelector") or {}, source_labels)
                if namespace_ok and pod_ok:
                    return True
    return False


def reachability(source: str, cluster: str) -> tuple[list[Obj], dict[str, dict[str, str]]]:
    """The cluster's NetworkPolicies and every namespace with the labels it would have."""
    objects = applied(source, cluster)
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    names = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    names |= {o["metadata"].get("namespace") for o in objects} - {None}
    names |= {"kube-system", "kuberay-system", "monitoring", "ingress-nginx", "default"}
    labels = {
        o["metadata"]["name"]: o["metadata"].get("labels", {})
        for o in objects
        if o["kind"] == "Namespace"
    }
    return policies, {n: {**labels.get(n, {}), NAMESPACE_NAME: n} for n in sorted(names)}


@pytest.mark.parametrize(("source", "cluster"), EVERY_CLUSTER, ids=IDS)
def test_a_team_namespace_takes_connections_from_its_own_pods_and_not_from_other_namespaces(
    source: str, cluster: str
) -> None:
    """Every pod of a team namespace takes any connection from pods of the same namespace, and
    none from a pod of another team's namespace or of any other namespace (estategen's own
    included), whatever the pods' labels."""
    policies, namespaces = reachability(source, cluster)
    teams = team_namespaces(source, cluster)
    pod = {"app": "x", "training.kubeflow.org/job-role": "master"}
    for target in teams:
        assert ingress_allowed(policies, namespaces, (target, {}), (target, pod), 443)
        assert ingress_allowed(policies, namespaces, (target, pod), (target, {}), 23456)
        for other in namespaces:
            if other != target:
                assert not ingress_allowed(policies, namespaces, (other, pod), (target, pod), 80)
                assert not ingress_allowed(policies, namespaces, (other, {}), (target, {}), 8080)


def test_kuberays_operator_reaches_the_ray_dashboard_where_rayjobs_run() -> None:
    """KubeRay's RayJob controller submits a job and follows it through the Ray head's
    dashboard, port 8265, from the operator's own pod (ray-operator/controllers/ray/
    rayjob_controller.go FetchHeadServiceURL and GetJobInfo, utils/constant.go
    DefaultDashboardPort, v1.7.0). On a cluster that runs RayJobs the operator's namespace may
    open that port in a team namespace, no other; where none run, not even that."""
    head = {"ray.io/node-type": "head"}
    policies, namespaces = reachability(ESTATE, "vc")
    operator = ("kuberay-system", {"app.kubernetes.io/name": "kuberay-operator"})
    assert ingress_allowed(policies, namespaces, operator, ("nlp-prod", head), 8265)
    assert not ingress_allowed(policies, namespaces, operator, ("nlp-prod", head), 6379)
    for other in set(namespaces) - {"kuberay-system", "nlp-prod"}:
        assert not ingress_allowed(policies, namespaces, (other, {}), ("nlp-prod", head), 8265)
    policies, namespaces = reachability(ESTATE, "kq")
    assert not ingress_allowed(policies, namespaces, operator, ("vision", head), 8265)


def test_the_readme_says_what_enforces_network_policies_on_the_clusters_provider() -> None:
    """A NetworkPolicy does nothing where the network plugin does not enforce it: EKS's VPC CNI
    only with enableNetworkPolicy, GKE with Dataplane V2 or enforcement turned on."""
    _, files = rendered("frontier.yaml")
    for cluster, needs in (("aws", "enableNetworkPolicy"), ("gcp", "Dataplane V2")):
        readme = files[f"kubernetes/{cluster}/README.md"].content.decode()
        assert "`team-ingress`" in readme and needs in readme


# --- a team's own directory of a shared file system ----------------------------------------

TEAM_DIRECTORIES = (
    STORAGE_ESTATE.replace(
        "kubernetes: {storage_class: projects}}",
        "kubernetes: {storage_class: projects, team_directory: 'groups/{team}'}}",
    )
    .replace(
        "kubernetes: {storage_class: home, clusters: [aws, gcp]}}",
        "kubernetes: {storage_class: home, clusters: [aws, gcp], team_directory: '{team}'}}",
    )
    .replace(
        "kubernetes: {storage_class: datasets, clusters: [aws]}",
        "kubernetes: {storage_class: datasets, clusters: [aws], team_directory: '{team}'}",
    )
)


def team_volumes(source: str, cluster: str, storage: str) -> dict[str, Obj]:
    """Each team namespace's volume of one file system, by namespace."""
    return {
        v["spec"]["claimRef"]["namespace"]: v["spec"]
        for v in applied(source, cluster)
        if v["kind"] == "PersistentVolume" and v["spec"]["claimRef"]["name"] == storage
    }


def test_a_team_volume_over_a_host_mount_is_the_teams_own_directory() -> None:
    """kubernetes.io/docs/concepts/storage/volumes (hostPath): the volume is the host path and
    what is below it, nothing above. With ``team_directory: groups/{team}`` each team's volume
    of a host-mounted file system is its own directory, so a pod of one team does not get the
    others' files, whatever user it runs as; without it, the whole mount."""
    volumes = team_volumes(TEAM_DIRECTORIES, "onprem", "projects")
    assert {ns: v["hostPath"] for ns, v in volumes.items()} == {
        "vision": {"path": "/projects/groups/vision", "type": "Directory"},
        "nlp-prod": {"path": "/projects/groups/nlp", "type": "Directory"},
        "ops": {"path": "/projects/groups/ops", "type": "Directory"},
    }
    whole = team_volumes(TEAM_DIRECTORIES, "onprem", "archive")
    assert {v["hostPath"]["path"] for v in whole.values()} == {"/gpfs/archive"}


def test_a_team_volume_over_nfs_or_s3_reaches_only_the_teams_directory() -> None:
    """NFS: csi-driver-nfs mounts ``server:share`` as its volume attributes say (R6.3), so the
    team's sub-directory of the export is the share; S3: Mountpoint's ``prefix`` (R6.11) keeps
    the mount to the keys under it, and a prefix ends in '/'."""
    home = team_volumes(TEAM_DIRECTORIES, "aws", "home")
    assert {ns: v["csi"]["volumeAttributes"]["share"] for ns, v in home.items()} == {
        "vision": "/export/home/vision",
        "nlp-prod": "/export/home/nlp",
        "ops": "/export/home/ops",
    }
    datasets = team_volumes(TEAM_DIRECTORIES, "aws", "datasets")
    prefixes = {
        ns: [o for o in v["mountOptions"] if o.startswith("prefix ")] for ns, v in datasets.items()
    }
    assert prefixes == {
        "vision": ["prefix train/vision/"],
        "nlp-prod": ["prefix train/nlp/"],
        "ops": ["prefix train/ops/"],
    }


def test_a_team_directory_where_the_driver_mounts_a_whole_file_system_is_refused() -> None:
    """The FSx for Lustre CSI driver mounts a file system by its mount name (R6.6), no directory
    of it: a team directory there would be ignored, so it is refused at its key."""
    text = STORAGE_ESTATE.replace(
        "kubernetes: {storage_class: fsx, clusters: [aws]}",
        "kubernetes: {storage_class: fsx, clusters: [aws], team_directory: '{team}'}",
    )
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    with pytest.raises(BlueprintInvalid) as failed:
        pipeline.validate_document(document)
    messages = [f"{f.path}: {f.message}" for f in failed.value.findings]
    assert any(
        m.startswith("storage[1].kubernetes.team_directory:") and "whole file system" in m
        for m in messages
    ), messages


# --- pods run as a team member in the team's group -----------------------------------------

IDENTITY = ESTATE.replace(
    "    - name: kq\n", "    - name: kq\n      tenancy: {unix_identity: true}\n"
)


def identity_policy(source: str, cluster: str) -> tuple[Obj, Obj]:
    objects = applied(source, cluster)
    (policy,) = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    return policy, binding


def refusals(policy: Obj, pod: Obj, namespace: Obj) -> list[str]:
    """The messages of the policy's validations a pod fails in a namespace, evaluated as the
    API server does (kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy:
    ``object`` the pod, ``namespaceObject`` its namespace, ``variables.<name>`` each variable
    in order, a validation that is not true refuses with its message)."""
    environment = celpy.Environment()
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(pod),
        "namespaceObject": celpy.json_to_cel(namespace),
    }
    variables: dict[str, Any] = {}
    for variable in policy["spec"]["variables"]:
        program = environment.program(environment.compile(variable["expression"]))
        activation["variables"] = celpy.celtypes.MapType(variables)
        variables[celpy.celtypes.StringType(variable["name"])] = program.evaluate(activation)
    activation["variables"] = celpy.celtypes.MapType(variables)
    failed = []
    for validation in policy["spec"]["validations"]:
        program = environment.program(environment.compile(validation["expression"]))
        result = program.evaluate(activation)
        if not (isinstance(result, celpy.celtypes.BoolType) and bool(result)):
            failed.append(validation["message"])
    return failed


def pod_as(user: int | None, group: int | None, **context: Any) -> Obj:
    security: Obj = {**context}
    if user is not None:
        security["runAsUser"] = user
    if group is not None:
        security["runAsGroup"] = group
    return {"spec": {"securityContext": security, "containers": [{"name": "c", "image": "i"}]}}


def test_a_team_pod_runs_as_a_member_in_the_teams_group_or_is_refused() -> None:
    """With ``tenancy.unix_identity`` a pod in a team namespace runs as one of the team's
    members and in the team's group, as a batch job on the Slurm side: another team's member,
    another group, no user at all (the image's), a container overriding the pod's user, or a
    supplementary group or fsGroup of another team is refused; the team's own gid as fsGroup
    is not."""
    policy, _ = identity_policy(IDENTITY, "kq")
    namespaces = team_namespaces(IDENTITY, "kq")
    vision, ops = namespaces["vision"], namespaces["ops"]
    assert refusals(policy, pod_as(11001, 21001), vision) == []
    assert refusals(policy, pod_as(11001, 21001, fsGroup=21001), vision) == []
    assert refusals(policy, pod_as(65534, 21003), ops) == []  # no members: nobody
    assert len(refusals(policy, pod_as(11002, 21001), vision)) == 1  # nlp's member
    assert len(refusals(policy, pod_as(11001, 21002), vision)) == 1  # nlp's group
    assert len(refusals(policy, pod_as(None, None), vision)) == 2  # the image's user
    assert len(refusals(policy, pod_as(11001, 21001, supplementalGroups=[21002]), vision)) == 1
    assert len(refusals(policy, pod_as(11001, 21001, fsGroup=21002), vision)) == 1
    overriding = pod_as(11001, 21001)
    overriding["spec"]["initContainers"] = [
        {"name": "i", "image": "i", "securityContext": {"runAsUser": 11002}}
    ]
    assert len(refusals(policy, overriding, vision)) == 1


def test_the_example_pods_pass_the_identity_policy() -> None:
    policy, _ = identity_policy(IDENTITY, "kq")
    namespaces = team_namespaces(IDENTITY, "kq")
    checked = 0
    for obj in examples(IDENTITY, "kq"):
        for pod in pod_templates(obj):
            namespace = namespaces[obj["metadata"]["namespace"]]
            assert refusals(policy, {"spec": pod}, namespace) == [], obj["metadata"]["name"]
            checked += 1
    assert checked


def test_the_identity_policy_binds_every_team_namespace_and_no_other() -> None:
    """The binding selects namespaces by label (a LabelSelector, as a NetworkPolicy's): the
    estate's team namespaces, not the NVIDIA or Kueue ones; it is valid for the target
    Kubernetes (v1 from 1.30), and a cluster without ``unix_identity`` gets none."""
    policy, binding = identity_policy(IDENTITY, "kq")
    for obj in (policy, binding):
        kubernetes_validate.validate(obj, "1.33", strict=True)
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    _, namespaces = reachability(IDENTITY, "kq")
    selected = {name for name, labels in namespaces.items() if _selects(selector, labels)}
    assert selected == set(team_namespaces(IDENTITY, "kq"))
    kinds = {o["kind"] for o in applied(IDENTITY, "vc")}
    assert "ValidatingAdmissionPolicy" not in kinds
