"""Power saving of a hybrid site (on-prem nodes beside State=CLOUD nodes): slurmctld suspends
every idle node SuspendExcNodes leaves out, so the render keeps every on-prem node out of it,
and import keeps a site's exclusion of its on-prem nodes. A slurm.conf fragment in, a
blueprint or render fact out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from estategen import hostlist, load
from estategen.importer.outcomes import Imported
from estategen.importer.site import import_site
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.renderers.slurm import slurm_conf

HYBRID = (
    "ClusterName=lab\nSlurmctldHost=ctl\nSuspendTime=300\n"
    "ResumeProgram=/opt/power/resume.sh\nSuspendProgram=/opt/power/suspend.sh\n{extra}"
    "NodeName=onprem[1-2] CPUs=4 RealMemory=8000\n"
    "NodeName=burst[1-4] CPUs=4 RealMemory=8000 State=CLOUD\n"
    "PartitionName=p Nodes=onprem[1-2],burst[1-4] Default=YES\n"
)


def imported(tmp_path: Path, extra: str) -> Imported:
    source = tmp_path / "slurm.conf"
    source.write_text(HYBRID.format(extra=extra))
    return import_site(source)


def estate_of(result: Imported) -> Estate:
    return validate_document(load.parse_blueprint(result.text.encode(), "i.yaml")).estate


def excluded(estate: Estate) -> list[str]:
    (line,) = [x for x in slurm_conf(estate).splitlines() if x.startswith("SuspendExcNodes=")]
    return [h for item in line.split("=", 1)[1].split(",") for h in hostlist.expand(item)]


def test_the_sites_exclusion_of_its_on_prem_nodes_is_kept(tmp_path: Path) -> None:
    result = imported(tmp_path, "SuspendExcNodes=onprem[1-2]\n")
    assert result.faithful
    assert not [o for o in result.outcomes if o.kind == "refused"]
    assert sorted(excluded(estate_of(result))) == ["onprem1", "onprem2"]


@pytest.mark.parametrize("extra", ["", "SuspendExcNodes=burst1\n"])
def test_the_render_keeps_every_on_prem_node_out_of_power_saving(
    tmp_path: Path, extra: str
) -> None:
    estate = estate_of(imported(tmp_path, extra))
    hosts = excluded(estate)
    assert {"onprem1", "onprem2"} <= set(hosts)
    assert not {"burst2", "burst3", "burst4"} & set(hosts)


def test_a_site_exclusion_of_cloud_and_on_prem_nodes_keeps_both(tmp_path: Path) -> None:
    result = imported(tmp_path, "SuspendExcNodes=onprem1,burst1\n")
    assert result.faithful
    assert sorted(excluded(estate_of(result))) == ["burst1", "onprem1", "onprem2"]


def test_import_says_which_on_prem_nodes_the_site_suspended(tmp_path: Path) -> None:
    result = imported(tmp_path, "SuspendExcNodes=onprem1\n")
    (note,) = [r for r in result.reviews if "on-prem nodes onprem2 " in r]
    assert "stay up" in note


# --- ResumeTimeout without cloud nodes: it also bounds `scontrol reboot` ------------------

ON_PREM = (
    "ClusterName=lab\nSlurmctldHost=ctl\nRebootProgram=/usr/sbin/reboot\nResumeTimeout=900\n"
    "NodeName=n[1-2] CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n[1-2] Default=YES\n"
)


def conf_lines(estate: Estate) -> list[str]:
    return [line for line in slurm_conf(estate).splitlines() if not line.startswith("#")]


def test_resume_timeout_without_cloud_nodes_is_the_sites(tmp_path: Path) -> None:
    source = tmp_path / "slurm.conf"
    source.write_text(ON_PREM)
    result = import_site(source)
    assert result.faithful
    lines = conf_lines(estate_of(result))
    assert "ResumeTimeout=900" in lines
    assert "RebootProgram=/usr/sbin/reboot" in lines
    assert not [line for line in lines if line.startswith("Suspend")]


def test_slurm_options_may_not_set_resume_timeout_beside_cloud_nodes(tmp_path: Path) -> None:
    from estategen.errors import BlueprintInvalid

    data = yaml.safe_load(imported(tmp_path, "").text)
    data["slurm"]["options"] = {"ResumeTimeout": "900"}
    with pytest.raises(BlueprintInvalid) as raised:
        validate_document(load.parse_blueprint(yaml.safe_dump(data).encode(), "b.yaml"))
    assert "slurm.options.ResumeTimeout" in [f.path for f in raised.value.findings]
