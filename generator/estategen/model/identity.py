"""Users, teams and the directory they come from."""

from __future__ import annotations

from dataclasses import dataclass

from estategen.model.values import SecretRef


@dataclass(frozen=True, slots=True)
class User:
    path: str
    name: str
    uid: int


@dataclass(frozen=True, slots=True)
class Team:
    path: str
    name: str
    gid: int
    members: tuple[str, ...]
    fairshare: int
    namespace: str
    # the team's name where Kubernetes needs a DNS label: its queues, labels and the
    # namespace's default (slurm_names.kubernetes_name: chem_lab is chem-lab)
    kubernetes_name: str
    # --- per-team Pod Security level ---
    # the level the team's namespaces enforce on every cluster, instead of the cluster's
    # tenancy.pod_security (None: the cluster's); KubernetesCluster.team_pod_security
    pod_security: str | None = None


@dataclass(frozen=True, slots=True)
class Directory:
    type: str
    uri: str | None
    base_dn: str | None
    bind_dn: str | None
    bind_password: SecretRef | None


@dataclass(frozen=True, slots=True)
class Identity:
    directory: Directory
    users: tuple[User, ...]
    teams: tuple[Team, ...]
