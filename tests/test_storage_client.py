"""The storage_client role's BeeGFS, GPFS, WEKA and S3 clients, run by Ansible itself.

The role runs on this machine in check mode (``--check --diff``), as a host of a pool that
mounts one BeeGFS, one GPFS, one WEKA and one S3 file system of ``STORAGE_ESTATE``, with the
rendered group variables, vendor downloads off (as in Molecule) and ``mount_state: present``:
Ansible evaluates every task and template and reports the files it would write, which the tests
read. Nothing on the machine changes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen.render import render

from k8s_harness import STORAGE_ESTATE, estate_of

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook")
pytestmark = pytest.mark.skipif(not ANSIBLE_PLAYBOOK, reason="needs ansible-playbook")

MOUNTS = ["projects", "archive", "fast", "datasets"]
VAULT = {
    "beegfs_conn_auth": "beegfs-shared-secret-for-tests",
    "s3_key_id": "AKIDEXAMPLE",
    "s3_secret_key": "wJalrEXAMPLEKEY",
}


@cache
def check_run(folder: Path) -> dict[str, Any]:
    """Render STORAGE_ESTATE into ``folder`` and run storage_client in check mode; Ansible's
    JSON report of the play."""
    for path, output in render(estate_of(STORAGE_ESTATE)).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output.content)
    ansible = folder / "ansible"
    group_vars = sorted((ansible / "group_vars" / "all").glob("*.yml"))
    play = {
        "name": "storage_client in check mode",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": True,
        "vars_files": [str(p) for p in group_vars],
        "vars": {
            "pool_storage": MOUNTS,
            "storage_client_vendor_downloads": False,
            "storage_client_mount_state": "present",
            **VAULT,
        },
        "roles": ["storage_client"],
    }
    playbook = folder / "check.yml"
    playbook.write_text(yaml.safe_dump([play], sort_keys=False))
    assert ANSIBLE_PLAYBOOK
    result = subprocess.run(
        [
            ANSIBLE_PLAYBOOK,
            "-i",
            "localhost,",
            "--check",
            "--diff",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(playbook),
        ],
        cwd=ansible,
        env={
            **os.environ,
            "ANSIBLE_ROLES_PATH": str(ansible / "roles"),
            "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_NOCOLOR": "1",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def tasks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each task's result on localhost, by task name (the last run of a name wins)."""
    out = {}
    for play in report["plays"]:
        for task in play["tasks"]:
            out[task["task"]["name"].removeprefix("storage_client : ")] = task["hosts"]["localhost"]
    return out


def written(result: dict[str, Any]) -> list[str]:
    """What a (looped) file task would write: the ``after`` of each diff."""
    items = result.get("results", [result])
    return [
        diff["after"]
        for item in items
        for diff in (item.get("diff") if isinstance(item.get("diff"), list) else [item.get("diff")])
        if diff and "after" in diff
    ]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return tasks(check_run(tmp_path_factory.mktemp("storage-client")))


def test_mountpoint_runs_one_service_per_bucket_with_its_prefix_and_flags(
    run: dict[str, dict[str, Any]],
) -> None:
    """mountpoint-s3 1.23.0 doc/CONFIGURATION.md: --prefix ends in '/', --region overrides
    detection, --allow-other lets job users in; the blueprint's options are its flags."""
    (unit,) = written(run["Install each bucket's service"])
    (exec_start,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert exec_start == (
        "ExecStart=/usr/bin/mount-s3 --foreground --allow-other --region us-east-1 "
        "--prefix train/ --allow-delete --uid=1000 mesa-datasets /datasets"
    )
    assert "EnvironmentFile=/etc/mount-s3/datasets.env" in unit
    assert VAULT["s3_secret_key"] not in unit


def test_s3_credentials_reach_only_a_root_file_and_never_the_log(
    run: dict[str, dict[str, Any]],
) -> None:
    credentials = run["Install each bucket's credentials"]
    assert credentials["censored"].startswith("the output has been hidden")
    folder = run["Create the credentials folder"]
    assert folder.get("mode", "0700") == "0700"


def test_beegfs_client_is_pointed_at_the_management_host_with_the_shared_secret(
    run: dict[str, dict[str, Any]],
) -> None:
    """ThinkParQ/beegfs-csi-driver docs/deployment.md 132-138 (BeeGFS 7: client, helperd with
    connAuthFile); the blueprint's port sets the management ports."""
    settings = run["Point the client at the management service and the secret"]["results"]
    lines = sorted(r["item"]["key"] + " = " + str(r["item"]["value"]) for r in settings)
    assert lines == [
        "connAuthFile = /etc/beegfs/connauthfile",
        "connMgmtdPortTCP = 8008",
        "connMgmtdPortUDP = 8008",
        "sysMgmtdHost = mgmtd01",
    ]
    (mounts,) = written(run["Mount the file system where the blueprint says"])
    assert mounts.splitlines()[-1] == "/projects /etc/beegfs/beegfs-client.conf"
    assert run["Install the connection authentication secret"]["censored"]


def test_weka_mounts_through_fstab_after_its_agent(run: dict[str, dict[str, Any]]) -> None:
    """WEKA's stateless clients: mount -t wekafs BACKENDS/FS, the agent first."""
    mounts = run["Mount the file systems"]["results"]
    (weka,) = [m for m in mounts if not m.get("skipped") and m["item"]["type"] == "weka"]
    assert weka["invocation"]["module_args"]["fstype"] == "wekafs"
    assert weka["invocation"]["module_args"]["src"] == "weka01,weka02/default"
    assert weka["invocation"]["module_args"]["opts"] == (
        "net=udp,x-systemd.requires=weka-agent.service,x-systemd.mount-timeout=infinity,_netdev"
    )
    assert {m["item"]["type"] for m in mounts if not m.get("skipped")} == {"weka"}


def test_vendor_downloads_are_skipped_when_turned_off(run: dict[str, dict[str, Any]]) -> None:
    for name in (
        "Add ThinkParQ's signing key",
        "Install the BeeGFS client",
        "Install the Storage Scale client",
        "Download the WEKA agent installer from a backend",
        "Download Mountpoint for Amazon S3",
    ):
        assert run[name].get("skipped"), name


def test_gpfs_without_a_package_source_stops_with_what_to_set(tmp_path: Path) -> None:
    """Storage Scale is licensed: with downloads on and no repository, the role says which
    variable to set instead of installing nothing silently."""
    defaults = yaml.safe_load(
        (
            Path(__file__).resolve().parent.parent
            / "playbooks/roles/storage_client/defaults/main.yml"
        ).read_text()
    )
    assert defaults["storage_client_gpfs_repository"] == ""
    tasks_file = (
        Path(__file__).resolve().parent.parent / "playbooks/roles/storage_client/tasks/gpfs.yml"
    )
    check = yaml.safe_load(tasks_file.read_text())[0]
    play = {
        "name": "gpfs assert",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": {
            "storage_client_vendor_downloads": True,
            "storage_client_gpfs_repository": "",
            "storage_client_mounts": [{"type": "gpfs", "source": "gpfs0"}],
        },
        "tasks": [check],
    }
    playbook = tmp_path / "gpfs.yml"
    playbook.write_text(yaml.safe_dump([play]))
    assert ANSIBLE_PLAYBOOK
    result = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", str(playbook)],
        env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "False"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "set storage_client_gpfs_repository" in result.stdout
