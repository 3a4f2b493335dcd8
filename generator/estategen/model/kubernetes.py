"""Kubernetes clusters: their queues, priority classes and GitOps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from estategen.model.identity import Team


@dataclass(frozen=True, slots=True)
class QueueTeam:
    path: str
    team: str
    quota: Mapping[str, int]
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True, slots=True)
class Queues:
    # the group the teams share idle GPUs in: Kueue's cohort; with Volcano, whose proportion
    # plugin divides the whole cluster among its queues, the cluster itself
    cohort: str
    teams: tuple[QueueTeam, ...]
    # --- queue engine: Kueue or Volcano ---
    path: str = ""
    engine: str = "kueue"
    cohort_declared: bool = True
    # how long Kueue waits for an admitted workload's pods to all be ready (None: estategen's
    # default, kubernetes.kueue.PODS_READY_TIMEOUT)
    pods_ready_timeout: str | None = None

    @property
    def volcano(self) -> bool:
        return self.engine == "volcano"


@dataclass(frozen=True, slots=True)
class PriorityClass:
    path: str
    name: str
    value: int
    description: str


@dataclass(frozen=True, slots=True)
class SopsSecrets:
    """Flux only: the Secrets a cluster's folder names, kept in Git encrypted with SOPS."""

    # the repository folder holding the encrypted Secrets (kept by the site, not rendered)
    folder: str
    # the Secret in flux-system with the private key (age or OpenPGP) that decrypts them
    key_secret: str


@dataclass(frozen=True, slots=True)
class GitOps:
    """The engine that syncs a cluster's folder from Git, and where it finds the folder."""

    path: str
    engine: str  # flux | argocd
    repository: str
    branch: str
    # the render output's folder in the repository (kubernetes/<cluster>/ lies below it)
    folder: str
    # Flux: the Secret in flux-system with the repository's credentials (GitRepository
    # spec.secretRef); Argo CD finds its repository credentials by URL instead
    secret: str | None = None
    sops: SopsSecrets | None = None


@dataclass(frozen=True, slots=True)
class KubernetesCluster:
    path: str
    name: str
    provider: str
    region: str | None
    project: str | None
    resource_group: str | None
    device_plugin_install: str
    mig_strategy: str
    queues: Queues | None
    priority_classes: tuple[PriorityClass, ...]
    prometheus_operator: bool
    # --- training frameworks: job, jobset, trainjob, mpijob, rayjob, workflow (Argo) ---
    frameworks: tuple[str, ...] = ("job",)
    # --- tenancy: the Pod Security Standards level every team namespace enforces ---
    pod_security: str = "restricted"
    # the group a team's users have in the API server's eyes, {team} for the team's name
    group: str = "{team}"
    # pods in a team namespace must run as a team member in the team's group (an admission
    # policy), as a batch job does on the Slurm side
    unix_identity: bool = False
    # --- GitOps: Flux or Argo CD objects that sync the folder, releases first ---
    gitops: GitOps | None = None

    def team_pod_security(self, team: Team) -> str:
        """The Pod Security Standards level a team's namespace enforces on this cluster: the
        team's own (``identity.teams[].pod_security``), looser or stricter, else the
        cluster's."""
        return team.pod_security or self.pod_security

    def team_group(self, team: str) -> str:
        """The group the cluster's authenticator gives a team's users (the Unix group of the
        team on the Slurm side, ``team``, as ``tenancy.group`` spells it)."""
        return self.group.replace("{team}", team)
