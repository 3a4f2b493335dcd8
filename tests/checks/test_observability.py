"""Specification of observability: the Slurm exporter's port (estategen.checks.observability): a
blueprint fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks

from .base import only, run

# --- slurm_exporter_port_free --------------------------------------------------------------------


def test_slurm_exporter_port_free_passes_the_default_ports() -> None:
    assert run(checks.slurm_exporter_port_free) == []


@pytest.mark.parametrize(
    ("fragment", "holder"),
    [
        ("observability: {slurm_exporter: {port: 9100}}", "by the node exporter"),
        ("observability: {slurm_exporter: {port: 6817}}", "by slurmctld"),
        (
            "observability: {slurm_exporter: {port: 6819}}\n"
            "slurm: {accounting: {host: lab-ctl,"
            " database: {host: localhost, password: {secret: db}}}}",
            "by slurmdbd",
        ),
    ],
)
def test_slurm_exporter_port_free_refuses_a_port_taken_on_the_controller(
    fragment: str, holder: str
) -> None:
    found = run(checks.slurm_exporter_port_free, fragment)
    only(found, "observability.slurm_exporter.port", holder)


def test_slurm_exporter_port_free_ignores_slurmdbd_on_another_host() -> None:
    fragment = (
        "observability: {slurm_exporter: {port: 6819}}\n"
        "slurm: {accounting: {host: lab-db, database: {host: localhost, password: {secret: db}}}}"
    )
    assert run(checks.slurm_exporter_port_free, fragment) == []
