"""The model built from a normalised blueprint document: no raw dicts travel past this module.

Derived defaults are filled here: a team's namespace defaults to its name's DNS form and the
Slurm cluster name to the estate's name."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from estategen import hostlist
from estategen.catalog import builtin_models, model_from_data
from estategen.declarations import NODE_POOL_PARAMETERS, PARTITION_PARAMETERS, QOS_PARAMETERS
from estategen.model.estate import AlertThresholds, Estate, Observability, Storage
from estategen.model.identity import Directory, Identity, Team, User
from estategen.model.kubernetes import (
    GitOps,
    KubernetesCluster,
    PriorityClass,
    Queues,
    QueueTeam,
    SopsSecrets,
)
from estategen.model.pools import CloudNodes, Cpu, Gpus, GpuType, NodePool, Sharing, Taint
from estategen.model.slurm import (
    ACCOUNTING_ENFORCE,
    NO_POWER_SAVING,
    SLURM_PATH_DEFAULTS,
    Accounting,
    Database,
    HealthCheck,
    Mpi,
    Partition,
    PartitionOverrides,
    PowerSaving,
    Preemption,
    Qos,
    Reservation,
    RestApi,
    Scheduling,
    Slurm,
    SlurmPackages,
    SlurmPaths,
    SlurmSite,
    slurm_build,
)
from estategen.model.values import SecretRef, Version, Versions, frozen
from estategen.slurm_names import kubernetes_name


def build(doc: Mapping[str, Any]) -> Estate:
    """Build the model from a document that passed :func:`estategen.schema.validation.normalise`."""
    identity = doc["identity"]
    directory = identity["directory"]
    slurm = doc.get("slurm") or {}
    observability = doc["observability"]
    versions = doc["versions"]
    slurm_model = _slurm(slurm, doc["estate"], declared="slurm" in doc)
    # derived default: the release the package source installs (a site's repository carries
    # the one versions.slurm names, so it has none: checks.slurm_package_source asks for it)
    slurm_version = str(
        versions.get("slurm")
        or slurm_build(slurm_model.packages).release
        or slurm_build(SlurmPackages()).release
    )
    gpu_models = dict(builtin_models())
    for spec in doc["gpu_models"]:
        gpu_models[spec["name"]] = model_from_data(spec["name"], spec, builtin=False)
    return Estate(
        suppress=tuple(doc["suppress"]),
        name=doc["estate"],
        description=doc["description"],
        versions=Versions(
            Version.parse(slurm_version),
            Version.parse(versions["kubernetes"]),
            slurm_declared="slurm" in versions,
        ),
        gpu_models=MappingProxyType(gpu_models),
        declared_gpu_models=tuple(
            (f"gpu_models[{i}]", spec["name"]) for i, spec in enumerate(doc["gpu_models"])
        ),
        identity=Identity(
            directory=Directory(
                type=directory["type"],
                uri=directory.get("uri"),
                base_dn=directory.get("base_dn"),
                bind_dn=directory.get("bind_dn"),
                bind_password=_secret(directory.get("bind_password")),
            ),
            users=tuple(
                User(f"identity.users[{i}]", u["name"], u["uid"])
                for i, u in enumerate(identity["users"])
            ),
            teams=tuple(
                Team(
                    path=f"identity.teams[{i}]",
                    name=t["name"],
                    gid=t["gid"],
                    members=tuple(t["members"]),
                    fairshare=t["fairshare"],
                    namespace=t.get("namespace") or kubernetes_name(t["name"]),
                    kubernetes_name=kubernetes_name(t["name"]),
                    pod_security=t.get("pod_security"),
                )
                for i, t in enumerate(identity["teams"])
            ),
        ),
        node_pools=tuple(_pool(i, p) for i, p in enumerate(doc["node_pools"])),
        slurm=slurm_model,
        kubernetes_clusters=tuple(
            _cluster(i, c, doc["estate"]) for i, c in enumerate(doc["kubernetes"]["clusters"])
        ),
        storage=tuple(
            Storage(
                path=f"storage[{i}]",
                name=s["name"],
                type=s["type"],
                source=s["source"],
                mount=s["mount"],
                options=tuple(s["options"]),
                pools=tuple(s["pools"]) if "pools" in s else None,
                storage_class=s.get("kubernetes", {}).get("storage_class"),
                class_clusters=tuple(s.get("kubernetes", {}).get("clusters", ())),
                instance=s.get("kubernetes", {}).get("instance"),
                team_directory=s.get("kubernetes", {}).get("team_directory"),
                region=s.get("s3", {}).get("region"),
                access_key_id=_secret(s.get("s3", {}).get("access_key_id")),
                secret_access_key=_secret(s.get("s3", {}).get("secret_access_key")),
                conn_auth=_secret(s.get("beegfs", {}).get("conn_auth")),
            )
            for i, s in enumerate(doc["storage"])
        ),
        observability=Observability(
            dcgm_exporter_port=observability["dcgm_exporter"]["port"],
            node_exporter_port=observability["node_exporter"]["port"],
            slurm_exporter_port=observability["slurm_exporter"]["port"],
            labels=frozen(dict(sorted(observability["labels"].items()))),
            alerts=AlertThresholds(**observability["alerts"]),
        ),
    )


def _secret(value: Mapping[str, str] | None) -> SecretRef | None:
    return SecretRef(value["secret"]) if value else None


def _expand_all(
    expressions: Any, limit: int = hostlist.MAX_EXPANSION, addresses: bool = False
) -> tuple[str, ...]:
    if expressions is None:
        return ()
    if isinstance(expressions, str):
        expressions = [expressions]
    names: list[str] = []
    for expression in expressions:
        names.extend(hostlist.expand(expression, limit, addresses))
    return tuple(names)


def _pool(index: int, p: Mapping[str, Any]) -> NodePool:
    hosts = p.get("hosts")
    expressions = (hosts,) if isinstance(hosts, str) else tuple(hosts or ())
    gpus = p.get("gpus")
    cpu = p.get("cpu")
    nodes = p.get("nodes") or {}
    network = p.get("network") or {}
    return NodePool(
        path=f"node_pools[{index}]",
        name=p["name"],
        scheduler=p["scheduler"],
        cluster=p.get("cluster"),
        provider=p["provider"],
        hosts=_expand_all(expressions),
        host_expressions=expressions,
        instance_type=p.get("instance_type"),
        nodes_min=nodes.get("min"),
        nodes_max=nodes.get("max"),
        cpu=Cpu(cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"], cpu.get("cpus"))
        if cpu
        else None,
        memory_gb=p.get("memory_gb"),
        gpus=Gpus(
            model=gpus["model"],
            count=gpus["count"],
            mig=tuple(gpus.get("mig", ())),
            sharing=Sharing(
                time_slicing=gpus.get("sharing", {}).get("time_slicing"),
                mps=gpus.get("sharing", {}).get("mps"),
                shard=gpus.get("sharing", {}).get("shard"),
            ),
            gres_type=gpus.get("gres_type"),
            feature=gpus.get("feature"),
            autodetect=gpus.get("autodetect"),
            typed=gpus.get("typed", True),
            files=tuple(gpus.get("files", ())),
            other_types=tuple(
                GpuType(
                    model=kind["model"],
                    count=kind["count"],
                    gres_type=kind.get("gres_type"),
                    files=tuple(kind.get("files", ())),
                )
                for kind in gpus.get("other_types", ())
            ),
        )
        if gpus
        else None,
        switches=_expand_all(network.get("switch")),
        blocks=_expand_all(network.get("block")),
        features=tuple(p["features"]),
        labels=frozen(dict(sorted(p["labels"].items()))),
        taints=tuple(Taint(t["key"], t["value"], t["effect"]) for t in p["taints"]),
        **{d.key: p.get(d.key) for d in NODE_POOL_PARAMETERS},
        host_weights=tuple(p.get("host_weights", ())),
        health_checks=tuple(p["health_check"]["checks"]) if "health_check" in p else None,
        cloud=_cloud(p.get("cloud")),
        site_cloud=p.get("state") == "cloud",
        addresses=_expand_all(p.get("addresses"), addresses=True),
        max_pods=p.get("max_pods"),
    )


def _cloud(c: Mapping[str, Any] | None) -> CloudNodes | None:
    if not c:
        return None
    return CloudNodes(
        image=c["image"],
        zone=c.get("zone"),
        project=c.get("project"),
        region=c.get("region"),
        subnet=c.get("subnet"),
    )


def _slurm(s: Mapping[str, Any], estate: str, declared: bool) -> Slurm:
    scheduling = s.get("scheduling") or {
        "priority_weights": {},
        "preemption": {"type": "none", "mode": "off"},
    }
    priority_type = scheduling.get("priority_type", "multifactor")
    half_life = scheduling.get("fairshare_half_life")
    accounting = s.get("accounting")
    return Slurm(
        declared=declared,
        cluster_name=s.get("cluster_name") or estate,
        controllers=tuple(s.get("controllers", ())),
        controller_addresses=frozen(dict(s.get("controller_addresses", {}))),
        accounting=Accounting(
            host=accounting["host"],
            port=accounting["port"],
            database=Database(
                host=accounting["database"]["host"],
                port=accounting["database"]["port"],
                name=accounting["database"]["name"],
                user=accounting["database"]["user"],
                password=SecretRef(accounting["database"]["password"]["secret"]),
            ),
            tres=tuple(accounting["tres"]) if "tres" in accounting else None,
            enforce=tuple(dict.fromkeys(accounting.get("enforce", ACCOUNTING_ENFORCE))),
        )
        if accounting
        else None,
        scheduling=Scheduling(
            priority_weights=frozen(dict(sorted(scheduling["priority_weights"].items()))),
            # derived default: a week with multifactor, none with basic
            fairshare_half_life=half_life
            if half_life is not None
            else "7-0"
            if priority_type == "multifactor"
            else None,
            preemption=Preemption(
                scheduling["preemption"]["type"], scheduling["preemption"]["mode"]
            ),
            priority_weight_tres=tuple(scheduling.get("priority_weight_tres", {}).items()),
            priority_type=priority_type,
            half_life_declared=half_life is not None,
        ),
        qos=tuple(
            Qos(
                path=f"slurm.qos[{i}]",
                name=q["name"],
                max_gpus_per_user=q.get("max_gpus_per_user"),
                preempt=tuple(q["preempt"]),
                **{d.key: q.get(d.key) for d in QOS_PARAMETERS},
            )
            for i, q in enumerate(s.get("qos", ()))
        ),
        partitions=tuple(
            Partition(
                path=f"slurm.partitions[{i}]",
                name=p["name"],
                pools=tuple(p["pools"]),
                default=p["default"],
                max_time=p["max_time"],
                default_time=p.get("default_time"),
                teams=tuple(p["teams"]),
                qos=p.get("qos"),
                priority_tier=p["priority_tier"],
                hidden=p["hidden"],
                **{d.key: p.get(d.key) for d in PARTITION_PARAMETERS if not d.site_override},
                overrides=_partition_overrides(p),
            )
            for i, p in enumerate(s.get("partitions", ()))
        ),
        reservations=tuple(_reservation(i, r) for i, r in enumerate(s.get("reservations", ()))),
        mpi=_mpi(s.get("mpi")),
        rest_api=_rest_api(s.get("rest_api")),
        options=frozen({k: str(v) for k, v in sorted(s.get("options", {}).items())}),
        health_check=HealthCheck(
            s["health_check"]["interval"], tuple(s["health_check"]["node_state"])
        )
        if "health_check" in s
        else None,
        power_saving=_power_saving(s.get("power_saving")),
        auth_key=_secret(s.get("auth_key")),
        site=_slurm_site(s),
        packages=SlurmPackages(**s.get("packages", {})),
    )


def _power_saving(p: Mapping[str, Any] | None) -> PowerSaving:
    if p is None:
        return NO_POWER_SAVING
    return PowerSaving(
        True,
        suspend_time=p["suspend_time"],
        resume_timeout=p["resume_timeout"],
        suspend_timeout=p["suspend_timeout"],
        resume_program=p.get("resume_program"),
        suspend_program=p.get("suspend_program"),
        resume_fail_program=p.get("resume_fail_program"),
        exclude_nodes=tuple(p.get("exclude_nodes", ())),
    )


def _slurm_site(s: Mapping[str, Any]) -> SlurmSite:
    """The site's daemon and plugin settings; the schema's defaults are estategen's."""
    default = SlurmSite()
    ports = s.get("ports") or {}
    ctld = str(ports["slurmctld"]) if "slurmctld" in ports else None
    low, _, high = ctld.partition("-") if ctld else ("", "", "")
    select = s.get("select") or {}
    completion = s.get("job_completion") or {}
    paths = SlurmPaths(**{**SLURM_PATH_DEFAULTS, **(s.get("paths") or {})})
    return SlurmSite(
        paths=paths,
        slurmctld_ports=(int(low), int(high or low)) if ctld else None,
        slurmd_port=ports.get("slurmd"),
        slurmd_user=s.get("slurmd_user"),
        return_to_service=s.get("return_to_service", default.return_to_service),
        select_type=select.get("type", default.select_type),
        # derived default: estategen's CR_Core_Memory, or none for linear (whole nodes)
        select_parameters=tuple(dict.fromkeys(select["parameters"]))
        if "parameters" in select
        else ()
        if select.get("type") == "linear"
        else default.select_parameters,
        task_plugins=tuple(dict.fromkeys(s["task_plugins"]))
        if "task_plugins" in s
        else default.task_plugins,
        job_acct_gather=s.get("job_acct_gather", default.job_acct_gather),
        prolog_flags=tuple(dict.fromkeys(s["prolog_flags"]))
        if "prolog_flags" in s
        else default.prolog_flags,
        scheduler_parameters=tuple(s["scheduler_parameters"])
        if "scheduler_parameters" in s
        else None,
        scheduler=s.get("scheduler", default.scheduler),
        enforce_part_limits=s.get("enforce_part_limits", default.enforce_part_limits),
        proctrack=s.get("proctrack", default.proctrack),
        job_completion=completion.get("type", default.job_completion),
        job_completion_location=_job_completion_location(completion, paths),
    )


def _job_completion_location(completion: Mapping[str, Any], paths: SlurmPaths) -> str | None:
    """JobCompLoc: the blueprint's location, else jobcomp.log in the folder of slurmctld's log
    (which the controller role creates for SlurmUser). Without a completion log only a
    location the blueprint gives (checks refuse it)."""
    if completion.get("type", "none") == "none":
        return completion.get("location")
    folder = paths.slurmctld_log_file.rsplit("/", 1)[0]
    return str(completion.get("location") or f"{folder}/jobcomp.log")


def _partition_overrides(p: Mapping[str, Any]) -> PartitionOverrides:
    return PartitionOverrides(
        state=p.get("state"),
        allow_qos=tuple(p.get("allow_qos", ())),
        allow_groups=tuple(p.get("allow_groups", ())),
        deny_accounts=tuple(p.get("deny_accounts", ())),
        **{d.key: p.get(d.key) for d in PARTITION_PARAMETERS if d.site_override},
        def_mem_per_cpu=p.get("def_mem_per_cpu"),
        def_mem_per_node=p.get("def_mem_per_node"),
        def_cpu_per_gpu=p.get("def_cpu_per_gpu"),
        def_mem_per_gpu=p.get("def_mem_per_gpu"),
        billing_weights=tuple((k, str(v)) for k, v in p["billing_weights"].items())
        if "billing_weights" in p
        else None,
        nodeset=p.get("nodeset"),
    )


def _local_time(text: str | None) -> str | None:
    """A blueprint date and time as scontrol writes it: seconds always shown."""
    return datetime.fromisoformat(text).isoformat(timespec="seconds") if text else None


def _reservation(index: int, r: Mapping[str, Any]) -> Reservation:
    start = _local_time(r["start"])
    assert start is not None
    return Reservation(
        path=f"slurm.reservations[{index}]",
        name=r["name"],
        start=start,
        duration=r.get("duration"),
        end=_local_time(r.get("end")),
        pools=tuple(r.get("pools", ())),
        partition=r.get("partition"),
        hosts=_expand_all(r.get("hosts")),
        flags=tuple(dict.fromkeys(r["flags"])),
        teams=tuple(r["teams"]),
        users=tuple(r["users"]),
    )


def _mpi(m: Mapping[str, Any] | None) -> Mpi:
    if not m:
        return Mpi("none", None)
    ports = m.get("ports")
    low, _, high = ports.partition("-") if ports else ("", "", "")
    return Mpi(m["default"], (int(low), int(high)) if ports else None)


def _rest_api(r: Mapping[str, Any] | None) -> RestApi | None:
    if not r:
        return None
    return RestApi(r["host"], r["port"], r["user"], SecretRef(r["jwt_key"]["secret"]))


def _gitops(g: Mapping[str, Any] | None, estate: str, path: str) -> GitOps | None:
    if not g:
        return None
    return GitOps(
        path=f"{path}.gitops",
        engine=g["engine"],
        repository=g["repository"],
        branch=g["branch"],
        # where `estategen render` writes the output unless told otherwise
        folder=g.get("path") or f"build/{estate}",
        secret=g.get("secret"),
        sops=SopsSecrets(g["sops"]["path"], g["sops"]["secret"]) if g.get("sops") else None,
    )


def _cluster(index: int, c: Mapping[str, Any], estate: str) -> KubernetesCluster:
    queues = c.get("queues")
    path = f"kubernetes.clusters[{index}]"
    return KubernetesCluster(
        path=path,
        name=c["name"],
        provider=c["provider"],
        region=c.get("region"),
        project=c.get("project"),
        resource_group=c.get("resource_group"),
        device_plugin_install=c["device_plugin"]["install"],
        mig_strategy=c["device_plugin"]["mig_strategy"],
        queues=Queues(
            cohort=queues.get("cohort") or c["name"],
            path=f"{path}.queues",
            engine=queues["engine"],
            cohort_declared="cohort" in queues,
            pods_ready_timeout=queues.get("pods_ready_timeout"),
            teams=tuple(
                QueueTeam(
                    path=f"{path}.queues.teams[{i}]",
                    team=t["team"],
                    quota=frozen(dict(sorted(t["quota"].items()))),
                    borrowing_limit=t.get("borrowing_limit"),
                    lending_limit=t.get("lending_limit"),
                )
                for i, t in enumerate(queues["teams"])
            ),
        )
        if queues
        else None,
        priority_classes=tuple(
            PriorityClass(
                f"{path}.priority_classes[{i}]", pc["name"], pc["value"], pc.get("description", "")
            )
            for i, pc in enumerate(c["priority_classes"])
        ),
        prometheus_operator=c["prometheus_operator"],
        frameworks=tuple(c["frameworks"]),
        pod_security=c["tenancy"]["pod_security"],
        group=c["tenancy"]["group"],
        unix_identity=c["tenancy"]["unix_identity"],
        gitops=_gitops(c.get("gitops"), estate, path),
    )
