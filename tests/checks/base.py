"""BASE and the helpers of the specifications of the semantic checks
(tests/checks/test_*.py): a blueprint fragment in, a finding (or none) out.

Every test deep-merges a small YAML fragment into BASE (a trimmed lab.yaml), sends the
result through the real loader, schema and model, and runs ONE check on the estate. Mappings
merge key by key, lists replace the base list whole, and `~` removes a key from the base.
Because only one check runs, a fragment need only be consistent for the check under test.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from estategen import load, model
from estategen.errors import Finding
from estategen.model import Estate
from estategen.schema.validation import normalise

ROOT = Path(__file__).resolve().parents[2]


BASE = """\
estate: lab
versions: {slurm: "22.05", kubernetes: "1.31"}
identity:
  users:
    - {name: alice, uid: 10001}
    - {name: bob, uid: 10002}
  teams:
    - {name: vision, gid: 20001, members: [alice]}
    - {name: nlp, gid: 20002, members: [bob]}
node_pools:
  - name: a100
    scheduler: slurm
    hosts: lab-gpu-[01-02]
    cpu: {sockets: 2, cores_per_socket: 32}
    memory_gb: 512
    gpus: {model: a100-sxm-80gb, count: 4}
  - name: l4-serve
    scheduler: kubernetes
    cluster: lab-k8s
    hosts: lab-k8s-[01-02]
    gpus: {model: l4-24gb, count: 2}
slurm:
  controllers: [lab-ctl]
  partitions:
    - {name: gpu, pools: [a100], default: true, max_time: "1-00:00:00"}
storage:
  - {name: home, type: nfs, source: "nfs01:/export/home", mount: /home}
kubernetes:
  clusters:
    - name: lab-k8s
      queues:
        cohort: lab
        teams:
          - {team: vision, quota: {l4-24gb: 2}}
          - {team: nlp, quota: {l4-24gb: 2}}
"""


Check = Callable[[Estate], Iterable[Finding]]


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# --- helpers -------------------------------------------------------------------------------------


def parse(text: str) -> load.Document:
    return load.parse_blueprint(textwrap.dedent(text).encode(), "bp.yaml")


@cache
def _base_data() -> dict[str, Any]:
    return parse(BASE).data


def merge(base: Any, patch: Any) -> Any:
    if not (isinstance(base, dict) and isinstance(patch, dict)):
        return patch
    merged = dict(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge(merged[key], value) if key in merged else value
    return merged


def blueprint(fragment: str = "") -> str:
    """BASE with the fragment merged in, as blueprint text."""
    if not fragment.strip():
        return BASE
    merged = merge(_base_data(), parse(fragment).data)
    return yaml.dump(merged, Dumper=DUMPER, sort_keys=False)


@cache
def estate(fragment: str = "") -> Estate:
    """The estate of BASE merged with the fragment (models are frozen, so one per fragment)."""
    document = load.parse_blueprint(blueprint(fragment).encode(), "bp.yaml")
    normalised, problems = normalise(document.data)
    assert not problems, [f"{p.path}: {p.message}" for p in problems]
    return model.build(normalised)


def run(check: Check, fragment: str = "") -> list[Finding]:
    return list(check(estate(fragment)))


def only(found: list[Finding], path: str, text: str, level: str = "error") -> Finding:
    """Assert exactly one finding, at ``path``, of ``level``, whose message holds ``text``."""
    assert len(found) == 1, [(f.path, f.message) for f in found]
    finding = found[0]
    assert (finding.path, finding.level) == (path, level), finding
    assert text in finding.message, finding.message
    return finding


def where(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.path, f.level) for f in found]


def line_of(text: str, needle: str) -> int:
    matches = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(matches) == 1, (needle, matches)
    return matches[0]


# --- fragments the specifications of several domains use -----------------------------------------


MANAGED_POOL = """
    node_pools:
      - name: cloud
        scheduler: kubernetes
        cluster: lab-k8s
        provider: gke
        instance_type: a3-highgpu-8g
        nodes: {min: 1, max: 4}
"""


def queues(*teams: str, pools: str = "") -> str:
    listed = "\n".join(f"                  - {team}" for team in teams)
    return (
        pools
        + """
        kubernetes:
          clusters:
            - name: lab-k8s
              queues:
                cohort: lab
                teams:
"""
        + listed
        + "\n"
    )


CLOUD_POOL = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        cpu: {sockets: 2, cores_per_socket: 32}
        memory_gb: 512
        gpus: {model: a100-sxm-80gb, count: 4}
      - name: burst
        scheduler: slurm
        provider: gke
        instance_type: a3-highgpu-8g
        hosts: burst-[01-04]
        nodes: {min: 1, max: 4}
        cpu: {sockets: 2, cores_per_socket: 52}
        memory_gb: 1872
        gpus: {model: h100-sxm-80gb, count: 8}
        cloud: {image: projects/aurora-hpc/global/images/slurm-v3, zone: us-central1-a,
                project: aurora-hpc}
"""


def joined(*fragments: str) -> str:
    """Fragments written at different indents, as one fragment."""
    return "\n".join(textwrap.dedent(f) for f in fragments)


SITE_CLOUD_POOL = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        cpu: {sockets: 2, cores_per_socket: 32}
        memory_gb: 512
        gpus: {model: a100-sxm-80gb, count: 4}
      - name: spot
        scheduler: slurm
        state: cloud
        hosts: spot-[1-4]
        cpu: {sockets: 1, cores_per_socket: 36}
        memory_gb: 192
"""
