"""The slurm.conf keys estategen lets through are the keys slurm.conf(5) documents.

slurmctld stops at a key it does not know, so `slurm.options` and `estategen import` may carry
only keys some recorded release documents (generator/estategen/data/slurm-conf-keys.json,
written by scripts/slurm-conf-keys.py from each release's page). Here: the record is the
installed page's, the installed slurmctld does stop at an unknown key, and import refuses such
a line (an environment file read through an Include) at its place.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from estategen.importer.site import import_site

from slurmlab import have_slurm, installed_slurm_version

ROOT = Path(__file__).resolve().parent.parent
PAGE = Path("/usr/share/man/man5/slurm.conf.5.gz")
RECORD = ROOT / "generator/estategen/data/slurm-conf-keys.json"


def documented_keys(page: str) -> list[str]:
    """scripts/slurm-conf-keys.py's reader of a slurm.conf(5) page."""
    spec = importlib.util.spec_from_file_location("keys", ROOT / "scripts/slurm-conf-keys.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    keys: list[str] = script.documented_keys(page)
    return keys


@pytest.mark.skipif(not (have_slurm() and PAGE.exists()), reason="needs slurm.conf(5) installed")
def test_the_recorded_keys_of_the_installed_release_are_its_pages() -> None:
    recorded = json.loads(RECORD.read_text())
    release = installed_slurm_version()
    assert release in recorded, f"Slurm {release}: run scripts/slurm-conf-keys.py {release}"
    page = gzip.decompress(PAGE.read_bytes()).decode()
    assert recorded[release] == sorted(set(documented_keys(page)), key=str.lower)


def test_the_page_reader_takes_keys_not_their_values() -> None:
    page = (
        '.SH "PARAMETERS"\n.TP\n\\fBSelectType\\fR\nThe plugin.\n.RS\n.TP\n'
        "\\fBselect/linear\\fR\nWhole nodes.\n.RE\n.TP\n\\fBTreeWidth\\fR\nFanout.\n"
        '.SH "NODE CONFIGURATION"\n.TP\n\\fBNodeName\\fR\n'
    )
    assert documented_keys(page) == ["SelectType", "TreeWidth"]


@pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm")
def test_slurmctld_stops_at_a_key_it_does_not_know(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=keys\nSlurmctldHost=localhost\nTOKEN=abc\n"
        f"StateSaveLocation={tmp_path}\nSlurmctldPidFile={tmp_path}/ctld.pid\n"
        "NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n"
    )
    run = subprocess.run(
        ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(conf)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode != 0
    assert "unrecognized key: TOKEN" in run.stderr


def test_import_refuses_a_line_no_slurm_conf_key_names_at_its_place(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=lab\nSlurmctldHost=ctl\nInclude site.env\n"
        "NodeName=n[1-2] CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n[1-2] Default=YES\n"
    )
    (tmp_path / "site.env").write_text("TOKEN=abc\nTreeWidth=16\n")
    imported = import_site(tmp_path / "slurm.conf")
    outcomes = {o.key: o for o in imported.outcomes}
    assert outcomes["TOKEN"].kind == "refused"
    assert (outcomes["TOKEN"].where.file, outcomes["TOKEN"].where.line) == (
        str(tmp_path / "site.env"),
        1,
    )
    assert "no slurm.conf key" in outcomes["TOKEN"].target
    assert outcomes["TreeWidth"].kind == "passed"
    assert "TOKEN" not in imported.text.split("# Settings the blueprint does not keep")[0]
