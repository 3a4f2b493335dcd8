"""The built-in GPU catalog (``data/gpus.yaml``): what each model is and how it can be split."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = 8

# What each managed provider calls the shapes it sells (the key of that table in gpus.yaml).
SHAPE_KEYS = {"gke": "machine_types", "eks": "instance_types", "aks": "vm_sizes"}
SHAPE_NOUNS = {"gke": "machine type", "eks": "instance type", "aks": "VM size"}


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG instance shape: its compute and memory slices and how many fit one GPU."""

    name: str
    compute: int
    memory: int
    max: int


@dataclass(frozen=True, slots=True)
class CloudOffer:
    """How one provider sells a GPU model: the exact shapes that carry it, with GPUs per shape.

    The count is tabled, not derived from the name (g2-standard-32 has one L4, g6e.12xlarge
    four L40S), so a pool's ``instance_type`` and ``gpus.count`` can be checked against it.
    """

    provider: str
    shapes: Mapping[str, int]
    accelerator: str | None = None
    """GKE's accelerator type, also the value of node label cloud.google.com/gke-accelerator."""

    @property
    def noun(self) -> str:
        return SHAPE_NOUNS[self.provider]


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A GPU model as the estate sees it."""

    name: str
    vendor: str
    memory_gb: int
    fabric: str
    mig: Mapping[str, MigProfile]
    clouds: Mapping[str, CloudOffer]
    builtin: bool

    @property
    def resource(self) -> str:
        """The extended resource name Kubernetes schedules whole GPUs of this model by."""
        return f"{self.vendor}.com/gpu"


def model_from_data(name: str, data: Mapping[str, Any], builtin: bool) -> GpuModel:
    return GpuModel(
        name=name,
        vendor=data.get("vendor", "nvidia"),
        memory_gb=data["memory_gb"],
        fabric=data.get("fabric", "none"),
        mig=MappingProxyType(
            {
                profile: MigProfile(profile, shape["compute"], shape["memory"], shape["max"])
                for profile, shape in sorted(data.get("mig", {}).items())
            }
        ),
        clouds=MappingProxyType(
            {
                provider: CloudOffer(
                    provider=provider,
                    shapes=MappingProxyType(dict(sorted(offer[SHAPE_KEYS[provider]].items()))),
                    accelerator=offer.get("accelerator"),
                )
                for provider, offer in sorted(data.get("clouds", {}).items())
            }
        ),
        builtin=builtin,
    )


@cache
def builtin_models() -> Mapping[str, GpuModel]:
    text = resources.files("estategen").joinpath("data/gpus.yaml").read_text(encoding="utf-8")
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return MappingProxyType(
        {name: model_from_data(name, spec, builtin=True) for name, spec in sorted(data.items())}
    )
