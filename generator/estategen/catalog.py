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


@dataclass(frozen=True)
class MigProfile:
    """One MIG instance shape: its compute and memory slices and how many fit one GPU."""

    name: str
    compute: int
    memory: int
    max: int


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as the estate sees it."""

    name: str
    vendor: str
    memory_gb: int
    fabric: str
    mig: Mapping[str, MigProfile]
    clouds: Mapping[str, str]
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
        clouds=MappingProxyType(dict(sorted(data.get("clouds", {}).items()))),
        builtin=builtin,
    )


@cache
def builtin_models() -> Mapping[str, GpuModel]:
    text = resources.files("estategen").joinpath("data/gpus.yaml").read_text(encoding="utf-8")
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return MappingProxyType(
        {name: model_from_data(name, spec, builtin=True) for name, spec in sorted(data.items())}
    )
