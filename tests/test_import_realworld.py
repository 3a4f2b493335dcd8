"""Real sites' slurm.conf files, imported, rendered, and read back from the real slurmctld.

For each configuration under tests/realworld/ (sources and licences in each SOURCE.md), the
original files and the files estategen renders from ``estategen import``'s blueprint are each
loaded by one slurmctld, and the facts ``scontrol show config|partition|node`` report are
compared. What only the test machine decides (paths, ports, the daemon user, debug levels,
start times) is set alike on both sides by the lab harness and left out of the comparison.

Every fact that differs is listed by name in tests/realworld/expected-differences.yaml with
its reason: the test fails on a difference the file does not list, and on a listed one that no
longer differs (the override keys that remove it have landed: delete its line). It prints the
share of equal facts over the corpus (pytest -s). To list every difference with both values
when updating the file, set ESTATEGEN_DUMP_DIFFERENCES=FILE (tab-separated lines appended).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from estategen import slurmconf
from estategen.importer.blueprint import write
from estategen.importer.site import import_site
from estategen.slurm_removed import at_least, removed_plugin

from conftest import run_cli
from mariadb import have_mariadb
from slurmlab import (
    Dbd,
    SlurmLab,
    have_slurm,
    installed_slurm_source,
    installed_slurm_version,
    render_blueprint,
    set_keys,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]

CORPUS = Path(__file__).parent / "realworld"
EXPECTED = CORPUS / "expected-differences.yaml"
ENTRIES = sorted(p.name for p in CORPUS.iterdir() if (p / "slurm.conf").is_file())

# `scontrol show config` lines the lab or the clock decides, not the configuration.
MACHINE_CONFIG = {
    "AuthInfo",
    "AuthAltTypes",  # set by the lab; compared from the files (FILE_FACTS)
    "AuthType",
    "CredType",
    "AuthAltParameters",
    "AccountingStoragePort",
    "AccountingStoragePass",
    "BOOT_TIME",
    "HASH_VAL",
    "JobCompLoc",
    "NEXT_JOB_ID",
    "SLURM_CONF",
    "SLURM_VERSION",
    "SlurmUser",
    "SlurmctldDebug",
    "SlurmctldLogFile",
    "SlurmctldPidFile",
    "SlurmctldPort",
    "SlurmdDebug",
    "SlurmdLogFile",
    "SlurmdPidFile",
    "SlurmdPort",
    "SlurmdSpoolDir",
    "StateSaveLocation",
}
# Node facts that change with time or come from a running slurmd (none runs here).
MACHINE_NODE = {
    "AllocMem",
    "AllocTRES",
    "Arch",
    "BootTime",
    "CPUAlloc",
    "CPULoad",
    "CPUEfctv",
    "CurrentWatts",
    "AveWatts",
    "ExtSensorsJoules",
    "ExtSensorsWatts",
    "ExtSensorsTemp",
    "FreeMem",
    "LastBusyTime",
    "NodeHostName",
    "OS",
    "Reason",
    "ResumeAfterTime",
    "SlurmdStartTime",
    "Version",
}


@dataclass
class Facts:
    config: dict[str, str]
    partitions: dict[str, dict[str, str]]
    nodes: dict[str, dict[str, str]]


def records(text: str) -> list[dict[str, str]]:
    """`scontrol -a -o show ...`: one record per line of Key=Value pairs (-a: hidden
    partitions and powered-down cloud nodes too)."""
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if "=" in line]


def config_facts(text: str) -> dict[str, str]:
    """The main block of `scontrol show config` (plugin sections after it follow other files)."""
    facts = {}
    for line in text.splitlines()[1:]:
        if not line.strip():
            break
        key, sep, value = line.partition("=")
        if sep:
            facts[key.strip()] = value.strip()
    return facts


def read_facts(lab: SlurmLab, files: Path) -> Facts:
    partitions = {
        p["PartitionName"]: p for p in records(lab.run("scontrol", "-a", "-o", "show", "part"))
    }
    nodes = {n["NodeName"]: n for n in records(lab.run("scontrol", "-a", "-o", "show", "node"))}
    config = config_facts(lab.run("scontrol", "show", "config"))
    config.update(file_facts(files))
    return Facts(config, partitions, nodes)


# Keys the lab removes on both sides (no auth/jwt plugin here); their values are compared
# as the files give them.
LAB_DROPPED = ("AuthAltTypes", "AuthAltParameters")
FILE_FACTS = (*LAB_DROPPED, "AuthType", "CredType")
FILE_DEFAULTS = {"AuthType": "auth/munge", "CredType": "cred/munge"}  # slurm.conf(5)


def file_facts(files: Path) -> dict[str, str]:
    conf = slurmconf.parse_file(files / "slurm" / "slurm.conf")
    out = {}
    for key in FILE_FACTS:
        setting = conf.parameter(key)
        value = "" if setting is None else setting.value.strip('"')
        out[f"{key}(file)"] = value or FILE_DEFAULTS.get(key, "")
    return out


def controller(conf_dir: Path) -> tuple[str, list[str]]:
    """The primary controller's host name, and every name a client may dial for it."""
    conf = slurmconf.parse_file(conf_dir / "slurm.conf")
    for key in ("SlurmctldHost", "ControlMachine"):
        setting = conf.parameter(key)
        if setting is not None:
            name, _, addr = setting.value.partition("(")
            names = [name, addr.rstrip(")")] if addr else [name]
            address = conf.parameter("ControlAddr")
            return name, names + ([address.value] if address else [])
    raise AssertionError(f"{conf_dir}: no controller")


@contextlib.contextmanager
def started(files: Path, work: Path, shared: Shared, cluster_name: str) -> Iterator[SlurmLab]:
    """One slurmctld on the files in ``files``/slurm (sub-folders too, for Include), with the
    shared munged and slurmdbd."""
    conf = slurmconf.parse_file(files / "slurm" / "slurm.conf")
    hosts = set(slurmconf.nodes(conf))
    ctl, ctl_names = controller(files / "slurm")
    storage_host = conf.parameter("AccountingStorageHost")
    extra = [storage_host.value] if storage_host is not None else []

    def install(lab: SlurmLab) -> None:
        storage = conf.parameter("AccountingStorageType")
        if storage is not None and storage.value.endswith("/slurmdbd"):
            shared.dbd.run("sacctmgr", "-i", "add", "cluster", cluster_name, check=False)
        # Debian's Slurm has no auth/jwt plugin: both sides run without AuthAlt*, compared from
        # the files instead (FILE_FACTS). A plugin the release removed is replaced by its
        # successor, as the site must to run that release at all (import does the same, and
        # says so). A file that is the include of a parent which sets ClusterName
        # (ParallelCluster's) gets the rendered cluster name: slurmctld needs one.
        path = lab.etc / "slurm.conf"
        values = {}
        release = installed_slurm_version()
        for setting in conf.parameters:
            gone = removed_plugin(setting.name, setting.value, release)
            if gone is not None:
                values[setting.key] = gone.successor
        if conf.parameter("ClusterName") is None:
            values["ClusterName"] = cluster_name
        auth = conf.parameter("AuthType")
        if auth is not None and auth.value.lower() in ("auth/none", '""', ""):
            # the lab's slurmdbd and clients authenticate with munge; compared from the files
            values.update({"AuthType": "auth/munge", "CredType": "cred/munge"})
        path.write_text(set_keys(path.read_text(), values, drop=LAB_DROPPED))
        for sub in (files / "slurm").iterdir():
            if sub.is_dir():
                shutil.copytree(sub, lab.etc / sub.name)

    with SlurmLab.running(
        files,
        work,
        [*hosts, *ctl_names, *extra],
        controller=ctl,
        shared=shared.dbd,
        configure=install,
    ) as lab:
        yield lab


def imported_name(blueprint: Path) -> str:
    data = yaml.safe_load(blueprint.read_text())
    return str(data["slurm"].get("cluster_name") or data["estate"])


@pytest.fixture(scope="module")
def expected() -> dict[str, object]:
    return yaml.safe_load(EXPECTED.read_text())


@dataclass
class Compared:
    total: int
    equal: int
    differences: dict[str, str]  # fact name -> "original != ours"


RESULTS: dict[str, Compared] = {}


def compare(original: Facts, ours: Facts, renamed: dict[str, str]) -> Compared:
    """Facts by name: config.Key, partition.NAME.Key, node.Key (over all nodes: a node
    attribute that differs anywhere is one name, counted once per node)."""
    total = equal = 0
    differences: dict[str, str] = {}

    def one(name: str, left: str | None, right: str | None, weight: int = 1) -> None:
        nonlocal total, equal
        total += weight
        if left == right:
            equal += weight
        else:
            differences.setdefault(name, f"{left!r} != {right!r}")

    for key in sorted(set(original.config) | set(ours.config)):
        if key not in MACHINE_CONFIG:
            one(f"config.{key}", original.config.get(key), ours.config.get(key))
    for name in sorted(set(original.partitions) | set(renamed.values())):
        left = original.partitions.get(name, {})
        right = ours.partitions.get(renamed.get(name, name), {})
        for key in sorted(set(left) | set(right)):
            if key == "PartitionName":
                continue
            one(f"partition.{name}.{key}", left.get(key), right.get(key))
    for host in sorted(set(original.nodes) | set(ours.nodes)):
        left = original.nodes.get(host, {})
        right = ours.nodes.get(host, {})
        for key in sorted(set(left) | set(right)):
            if key not in MACHINE_NODE and key != "NodeName":
                one(f"node.{key}", left.get(key), right.get(key))
    return Compared(total, equal, differences)


@dataclass
class Shared:
    """munged and slurmdbd (on MariaDB) that every slurmctld of the module talks to."""

    dbd: SlurmLab


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    if not have_mariadb():
        pytest.skip("needs mariadb-server")
    work = tmp_path_factory.mktemp("accounting")
    # slurmdbd.conf as estategen renders it, from a small blueprint with accounting
    blueprint = DBD_BLUEPRINT.format(
        version=installed_slurm_version(), source=installed_slurm_source()
    )
    with SlurmLab.running(
        render_blueprint(work, blueprint, "dbd"),
        work / "lab",
        ["lab-dbd", "lab-db"],
        dbd=Dbd("lab-dbd", load=False),
    ) as dbd:
        yield Shared(dbd)


DBD_BLUEPRINT = """\
estate: dbd
versions: {{slurm: "{version}"}}
node_pools:
  - {{name: n, scheduler: slurm, hosts: n1, cpu: {{sockets: 1, cores_per_socket: 1}},
     memory_gb: 4}}
slurm:
  packages: {{source: {source}}}
  controllers: [lab-ctl]
  accounting: {{host: lab-dbd, database: {{host: lab-db, password: {{secret: db}}}}}}
  partitions: [{{name: p, pools: [n]}}]
"""


def site_copy(entry: str, folder: Path) -> Path:
    """The corpus entry as a site running the installed release would have it. Files written
    for releases whose default SelectType is select/cons_tres (23.11 on, and what
    ParallelCluster builds) set CR_CPU parameters that 22.05's default, select/linear, refuses
    (slurm.conf(5) of 22.05, SelectTypeParameters): on a release before 23.11 they say the
    plugin they ran. Import and the lab both read this copy."""
    shutil.copytree(CORPUS / entry, folder, ignore=shutil.ignore_patterns("SOURCE.md", "LICENSE"))
    path = folder / "slurm.conf"
    conf = slurmconf.parse_file(path)
    if conf.parameter("SelectType") is None and not at_least(installed_slurm_version(), "23.11"):
        path.write_text(set_keys(path.read_text(), {"SelectType": "select/cons_tres"}))
    return folder


@pytest.mark.parametrize("entry", ENTRIES)
def test_import_render_keeps_what_slurmctld_shows(
    entry: str, shared: Shared, expected: dict[str, object], tmp_path: Path
) -> None:
    source = site_copy(entry, tmp_path / "site")
    gres = source / "gres.conf"
    topology = source / "topology.conf"
    imported = import_site(
        source / "slurm.conf",
        gres if gres.exists() else None,
        topology if topology.exists() else None,
        slurm_version=installed_slurm_version(),
    )
    assert not any(o.kind == "refused" and "no NodeName" in o.target for o in imported.outcomes)
    blueprint = tmp_path / "blueprint.yaml"
    write(imported, blueprint)
    # slurm.conf does not say where the packages come from; here, from this machine's Debian
    # (the default, Debian 12's, installs 22.05 only)
    data = yaml.safe_load(blueprint.read_text())
    data["slurm"]["packages"] = {"source": installed_slurm_source()}
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False))
    rendered = tmp_path / "rendered"
    result = run_cli("render", blueprint, "-o", rendered)
    assert result.returncode == 0, result.stderr
    original = tmp_path / "original"
    shutil.copytree(source, original / "slurm")

    renamed = {
        p.name: p.name.lower().replace("_", "-")
        for p in slurmconf.with_defaults(
            slurmconf.parse_file(source / "slurm.conf").records, "PartitionName"
        )
    }
    facts = []
    for files, work in ((original, tmp_path / "lab-original"), (rendered, tmp_path / "lab-ours")):
        with started(files, work, shared, imported_name(blueprint)) as lab:
            facts.append(read_facts(lab, files))
    compared = compare(facts[0], facts[1], renamed)
    RESULTS[entry] = compared
    dump = os.environ.get("ESTATEGEN_DUMP_DIFFERENCES")
    if dump:
        with open(dump, "a", encoding="utf-8") as stream:
            for name, values in sorted(compared.differences.items()):
                stream.write(f"{entry}\t{name}\t{values}\n")
    items = (expected.get("entries") or {}).get(entry) or []  # type: ignore[union-attr]
    listed = listed_on(items, installed_slurm_version())
    reasons = expected.get("reasons") or {}
    found = set(compared.differences)
    unlisted = {name: compared.differences[name] for name in sorted(found - listed)}
    gone = sorted(listed - found)
    assert not unlisted, f"{entry}: differences not in {EXPECTED.name}: {unlisted}"
    assert not gone, f"{entry}: listed in {EXPECTED.name} but equal now: {gone}"
    unexplained = [n for n in listed if reason(reasons, entry, n) is None]  # type: ignore[arg-type]
    assert not unexplained, f"{entry}: listed without a reason: {unexplained}"


def listed_on(items: list[str | dict[str, str]], release: str) -> set[str]:
    """The facts an entry lists for ``release``: a name, or ``{fact: NAME, before: X.Y}`` /
    ``{fact: NAME, from: X.Y}`` for a difference only a range of releases shows."""
    out = set()
    for item in items:
        if isinstance(item, str):
            out.add(item)
        elif ("from" not in item or at_least(release, item["from"])) and (
            "before" not in item or not at_least(release, item["before"])
        ):
            out.add(item["fact"])
    return out


def reason(reasons: dict[str, str], entry: str, name: str) -> str | None:
    """The reason for a listed difference: by entry and name, by name, or for a partition
    key by ``partition.*.Key``."""
    wildcard = re.sub(r"^partition\.[^.]+\.", "partition.*.", name)
    for key in (f"{entry}:{name}", name, wildcard):
        if key in reasons:
            return reasons[key]
    return None


def test_corpus_share_of_equal_facts() -> None:
    """Printed for the report (pytest -s); the figure is asserted not to fall below today's."""
    if len(RESULTS) < len(ENTRIES):
        pytest.skip("runs after every corpus entry")
    total = sum(c.total for c in RESULTS.values())
    equal = sum(c.equal for c in RESULTS.values())
    share = 100 * equal / total
    for entry, compared in sorted(RESULTS.items()):
        print(f"{entry}: {compared.equal}/{compared.total} facts equal")
    print(f"corpus: {equal}/{total} facts equal ({share:.1f}%)")
    floors = yaml.safe_load(EXPECTED.read_text())["floor_percent"]
    floor = float(floors[installed_slurm_version()])
    assert share >= floor, f"{share:.1f}% of facts equal, below the recorded {floor}%"
