"""Small values every part of the model uses: versions, secret references, frozen mappings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


def frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    text: str

    @classmethod
    def parse(cls, text: str) -> Version:
        major, minor = text.split(".")
        return cls(int(major), int(minor), text)

    def at_least(self, text: str) -> bool:
        other = Version.parse(text)
        return (self.major, self.minor) >= (other.major, other.minor)


@dataclass(frozen=True, slots=True)
class Versions:
    slurm: Version
    kubernetes: Version
    # False: versions.slurm is the release slurm.packages.source installs, filled here
    slurm_declared: bool = True


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A secret by name; resolved at deploy time (Ansible Vault, Pulumi config), never here."""

    name: str
