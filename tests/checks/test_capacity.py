"""Specification of the capacity warnings (estategen.checks.capacity): a blueprint fragment in, a
finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

from estategen import checks

from .base import only, run

# --- capacity_warnings ---------------------------------------------------------------------------


def test_a_slurm_pool_in_no_partition_is_stranded_capacity() -> None:
    found = run(
        checks.capacity_warnings,
        """
        node_pools:
          - {name: a100, scheduler: slurm, hosts: n1}
          - {name: cpu, scheduler: slurm, hosts: c1}
        """,
    )
    stranded = [f for f in found if f.rule == "check/stranded-capacity"]
    only(stranded, "node_pools[1]", "no partition draws on pool cpu", level="warning")
