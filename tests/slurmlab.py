"""A Slurm cluster on localhost for tests, started on rendered configuration files.

The rendered files are used as they are, except for what only the test machine decides:
state, spool, log and pid paths go to a temp folder, ports are free ones, daemons run as root
with a private munge socket, and GPU device files are plain files. Host names resolve
through a private /etc/hosts bind-mounted in a mount namespace, and each daemon runs in its
own UTS namespace under the host name the blueprint gives it; the machine's own /etc/hosts
and host name are never touched. Every process started is stopped by pid.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from mariadb import MariaDB  # imports this module's free_port: imported where used

SBIN = Path("/usr/sbin")
# slurmdbd's password for its MariaDB user, in every lab
DATABASE_PASSWORD = "test-only-password"


def have_slurm() -> bool:
    return all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "munged", "unshare"))


def installed_slurm_version() -> str:
    """The installed Slurm's release as a blueprint's ``versions.slurm`` writes it ("22.05").

    Read from ``slurmctld -V`` ("slurm-wlm 22.05.8", "slurm 24.11.5"), so the tests render for
    the daemons they start, whichever Debian release installed them.
    """
    out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"\b(\d+)\.(\d+)\.\d+", out)
    if not match:
        raise AssertionError(f"cannot read a Slurm version from {out!r}")
    return f"{match[1]}.{int(match[2]):02d}"


def installed_slurm_at_least(release: str) -> bool:
    """Whether the installed Slurm is ``release`` ("23.11") or later."""
    from estategen.model import Version

    return Version.parse(installed_slurm_version()).at_least(release)


def installed_slurm_source() -> str:
    """The slurm.packages source that installs this machine's Slurm ("debian-12" for 22.05,
    "debian-13" for 24.11), so the tests render for the daemons they start."""
    from estategen.model import DEBIAN_SLURM_BUILDS

    release = installed_slurm_version()
    sources = [s for s, build in DEBIAN_SLURM_BUILDS.items() if build.release == release]
    if not sources:
        raise AssertionError(f"no Debian release ships Slurm {release}")
    return sources[0]


@functools.cache
def machine_shape() -> dict[str, int]:
    """Sockets, cores and threads of this machine as slurmd sees them."""
    line = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    return {
        "sockets": int(fields["SocketsPerBoard"]) * int(fields.get("Boards", 1)),
        "cores_per_socket": int(fields["CoresPerSocket"]),
        "threads_per_core": int(fields["ThreadsPerCore"]),
    }


def machine_cpu() -> str:
    """A pool's ``cpu`` as this machine's shape, a YAML flow mapping: a pool whose node is
    this machine registers its slurmd with the CPUs slurm.conf gives it."""
    shape = machine_shape()
    return (
        f"{{sockets: {shape['sockets']}, cores_per_socket: {shape['cores_per_socket']}, "
        f"threads_per_core: {shape['threads_per_core']}}}"
    )


def machine_cpus() -> int:
    """This machine's CPUs (threads), all of which its node offers."""
    shape = machine_shape()
    return shape["sockets"] * shape["cores_per_socket"] * shape["threads_per_core"]


# The GPU lab: one node, this machine, with the controller, slurmdbd and MariaDB beside it.
GPU_NODE = "lab-node-01"
GPU_LAB_HOSTS = (GPU_NODE, "lab-ctl", "lab-dbd", "lab-db")


def gpu_lab_blueprint(
    estate: str,
    teams: Iterable[str],
    slurm: str,
    gpus: str = "model: l4-24gb, count: 2",
    pool: str = "",
) -> str:
    """An estate whose one node, GPU_NODE, is this machine: all its CPUs, 4 GB and ``gpus``;
    users alice and bob in ``teams`` (YAML flow mappings), slurmctld on lab-ctl, slurmdbd on
    lab-dbd and its database on lab-db. ``pool`` adds keys to the pool (YAML indented by 4),
    ``slurm`` the keys under test (indented by 2)."""
    return (
        textwrap.dedent(
            f"""\
            estate: {estate}
            versions: {{slurm: "{installed_slurm_version()}"}}
            identity:
              users:
                - {{name: alice, uid: 10001}}
                - {{name: bob, uid: 10002}}
              teams:
            """
        )
        + "".join(f"    - {team}\n" for team in teams)
        + textwrap.dedent(
            f"""\
            node_pools:
              - name: gpu
                scheduler: slurm
                hosts: {GPU_NODE}
                cpu: {machine_cpu()}
                memory_gb: 4
                gpus: {{{gpus}}}
            """
        )
        + pool
        + textwrap.dedent(
            f"""\
            slurm:
              packages: {{source: {installed_slurm_source()}}}
              controllers: [lab-ctl]
              accounting:
                host: lab-dbd
                database: {{host: lab-db, password: {{secret: slurmdbd_db}}}}
            """
        )
        + slurm
    )


# /proc/driver/nvidia/gpus/<bus id>/information as the NVIDIA driver writes it, read by
# SchedMD/slurm src/plugins/gpu/nvidia/gpu_nvidia.c (_set_name_and_file at slurm-24-11-5-1,
# _set_basic_info at slurm-25-11-7-1: Model, GPU UUID, Device Minor; its Type is the Model in
# lower case with '_' for spaces: nvidia_h100_80gb_hbm3)
DRIVER_INFORMATION = (
    "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-{index:08d}\nDevice Minor: \t {index}\n"
)


def fake_nvidia_driver(root: Path, gpus: int, cpus: str) -> str:
    """Shell that mounts, in the calling mount namespace only, what gpu_nvidia.c reads of
    an NVIDIA driver with ``gpus`` GPUs: /proc/driver/nvidia/gpus/<bus>/information,
    /sys/bus/pci/drivers/nvidia/<bus>/local_cpulist (files made under ``root``), and the
    device files /dev/nvidia<minor> it names (character devices, major 195, that nothing
    opens; an overlay on /dev, so the machine's /dev is left alone)."""
    proc = root / "proc-driver"
    pci = root / "pci-drivers"
    for index in range(gpus):
        bus = f"0000:{index + 1:02x}:00.0"
        (proc / "nvidia" / "gpus" / bus).mkdir(parents=True)
        (proc / "nvidia" / "gpus" / bus / "information").write_text(
            DRIVER_INFORMATION.format(index=index)
        )
        (pci / "nvidia" / bus).mkdir(parents=True)
        (pci / "nvidia" / bus / "local_cpulist").write_text(f"{cpus}\n")
    dev = root / "dev"
    dev.mkdir()
    devices = " && ".join(f"mknod -m 666 {dev}/up/nvidia{i} c 195 {i}" for i in range(gpus))
    return (
        f'mount --bind "{proc}" /proc/driver && mount --bind "{pci}" /sys/bus/pci/drivers'
        f' && mount -t tmpfs tmpfs "{dev}" && mkdir "{dev}/up" "{dev}/work" && {devices}'
        f' && mount -t overlay overlay -o "lowerdir=/dev,upperdir={dev}/up,workdir={dev}/work"'
        " /dev"
    )


def render_blueprint(folder: Path, text: str, name: str = "blueprint") -> Path:
    """``text`` written to ``folder``/NAME.yaml and rendered with the CLI, as a user would,
    into ``folder``/out; that folder."""
    from conftest import run_cli

    source = folder / f"{name}.yaml"
    source.write_text(text)
    result = run_cli("render", source, "-o", folder / "out")
    assert result.returncode == 0, result.stderr + result.stdout
    return folder / "out"


def gpu_node_site(folder: Path, gres_types: str, gres: str, gres_conf: str) -> tuple[Path, Path]:
    """A site's slurm.conf and gres.conf: controller lab-ctl and one GPU node (GPU_NODE, the
    machine's shape, 2 GiB) with ``gres``, in a default partition."""
    shape = machine_shape()
    slurm = folder / "slurm.conf"
    slurm.write_text(
        "ClusterName=site\nSlurmctldHost=lab-ctl\nSelectType=select/cons_tres\n"
        f"GresTypes={gres_types}\n"
        f"NodeName={GPU_NODE} Sockets={shape['sockets']} "
        f"CoresPerSocket={shape['cores_per_socket']} ThreadsPerCore={shape['threads_per_core']} "
        f"RealMemory=2048 Gres={gres}\n"
        f"PartitionName=gpu Nodes={GPU_NODE} Default=YES\n"
    )
    gres_file = folder / "gres.conf"
    gres_file.write_text(gres_conf)
    return slurm, gres_file


def imported_blueprint(folder: Path, slurm: Path, gres: Path) -> dict[str, Any]:
    """The blueprint ``estategen import`` writes for the site (which it must render
    faithfully), set to install this machine's Slurm packages."""
    from estategen.importer.blueprint import write
    from estategen.importer.site import import_site

    imported = import_site(slurm, gres, slurm_version=installed_slurm_version())
    assert imported.faithful, imported.outcomes
    blueprint = folder / "imported.yaml"
    write(imported, blueprint)
    data: dict[str, Any] = yaml.safe_load(blueprint.read_text())
    data["slurm"]["packages"] = {"source": installed_slurm_source()}
    return data


@contextlib.contextmanager
def running_one_gpu_node(folder: Path, data: dict[str, Any], gpu_files: int) -> Iterator[SlurmLab]:
    """``data`` rendered and run: slurmctld on lab-ctl, slurmd on GPU_NODE with
    ``gpu_files`` fake /dev/nvidia files."""
    rendered = render_blueprint(folder, yaml.safe_dump(data, sort_keys=False), "imported")
    with SlurmLab.running(
        rendered,
        folder / "run",
        [GPU_NODE, "lab-ctl"],
        controller="lab-ctl",
        nodes=[GPU_NODE],
        gpu_files=gpu_files,
    ) as cluster:
        yield cluster


def parse_records(text: str) -> list[dict[str, str]]:
    """`scontrol -o show ...` output: one record per line of Key=Value pairs."""
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]


@contextlib.contextmanager
def slurmdbd_database(folder: Path) -> Iterator[MariaDB]:
    """MariaDB in ``folder`` with slurmdbd's database and user, stopped on leaving."""
    from mariadb import MariaDB

    database = MariaDB(folder)
    try:
        database.start()
        database.create("slurm_acct_db", "slurm", DATABASE_PASSWORD)
        yield database
    finally:
        database.stop()


@dataclass(frozen=True)
class Dbd:
    """How a lab runs slurmdbd: on ``host``, storing into ``database`` (a running one that
    several labs share, made by slurmdbd_database) or else into the lab's own MariaDB.

    With ``load``, what the roles do before slurmctld starts: `sacctmgr load` of sacct.cfg
    and the `add qos` lines of qos.sacctmgr, then, once slurmctld runs, the rest of it.
    ``root_accounts`` are the accounts the operator grants root by hand before slurmctld
    starts (so all count in its first fair-share pass): the tests submit jobs as root, a name
    no blueprint may give a user.
    """

    host: str
    database: MariaDB | None = None
    load: bool = True
    root_accounts: tuple[str, ...] = ()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def set_keys(conf: str, values: Mapping[str, str], drop: Iterable[str] = ()) -> str:
    """Replace ``Key=value`` lines (case-insensitive keys), appending keys not present."""
    lines = conf.splitlines()
    pending = dict(values)
    dropped = {k.lower() for k in drop}
    out = []
    for line in lines:
        key = line.split("=", 1)[0].strip() if "=" in line and not line.startswith("#") else ""
        if key.lower() in dropped:
            continue
        match = next((k for k in pending if k.lower() == key.lower()), None)
        if match:
            out.append(f"{match}={pending.pop(match)}")
        else:
            out.append(line)
    out.extend(f"{k}={v}" for k, v in pending.items())
    return "\n".join(out) + "\n"


class SlurmLab:
    """Start munged, slurmdbd, slurmctld and slurmd for one rendered estate.

    SlurmLab.running starts a lab and stops it again; the methods are its steps.
    """

    def __init__(self, rendered: Path, work: Path, hosts: Iterable[str]) -> None:
        self.rendered = rendered
        self.work = work
        self.etc = work / "etc"
        self.etc.mkdir(parents=True)
        for sub in ("state", "spool", "log", "run", "dev", "munge"):
            (work / sub).mkdir()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.controllers: set[str] = set()  # the SlurmctldHost names started
        self.hosts_file = work / "hosts"
        self.host_names = sorted(set(hosts))
        self.write_hosts(down=())
        self.munge_socket = work / "munge" / "munge.socket"
        work.chmod(0o755)  # munged wants every folder above its socket searchable
        self.ports = {"ctld": free_port(), "slurmd": free_port(), "dbd": free_port()}
        # folders bind-mounted over system folders in every daemon's mount namespace (target ->
        # source), e.g. a folder of fake commands over /usr/local/bin, which programs that set
        # their own PATH search before /usr/bin
        self.binds: dict[str, Path] = {}
        self.env = {**os.environ, "SLURM_CONF": str(self.etc / "slurm.conf")}

    @classmethod
    @contextlib.contextmanager
    def running(
        cls,
        rendered: Path,
        work: Path,
        hosts: Iterable[str],
        *,
        controller: str | None = None,
        nodes: Iterable[str] = (),
        gpu_files: int = 0,
        dbd: Dbd | None = None,
        shared: SlurmLab | None = None,
        configure: Callable[[SlurmLab], None] | None = None,
    ) -> Iterator[SlurmLab]:
        """A lab on the files ``rendered`` holds, in ``work``, its daemons stopped on leaving.

        In order: the rendered files are installed (``gpu_files`` device files for gres.conf);
        ``configure`` edits them, or the lab, before any daemon starts; munged starts (unless
        the lab uses ``shared``'s munged and slurmdbd, another running lab's); slurmdbd as
        ``dbd`` says; slurmctld as ``controller``; slurmd as each of ``nodes``, which are
        then waited for until idle. ``hosts`` are every name the lab's daemons dial.
        """
        lab = cls(rendered, work, hosts)
        with contextlib.ExitStack() as databases:
            try:
                if shared:
                    lab.munge_socket = shared.munge_socket
                    lab.ports["dbd"] = shared.ports["dbd"]
                lab.install_configs(gpu_files=gpu_files)
                if configure:
                    configure(lab)
                if not shared:
                    lab.start_munge()
                if dbd:
                    database = dbd.database or databases.enter_context(
                        slurmdbd_database(work / "db")
                    )
                    lab.install_slurmdbd(database.port, DATABASE_PASSWORD)
                    lab.start_slurmdbd(dbd.host)
                    if dbd.load:
                        lab.load_accounts()
                    for account in dbd.root_accounts:
                        lab.run("sacctmgr", "-i", "add", "user", "root", f"account={account}")
                if controller:
                    lab.start_slurmctld(controller)
                for node in nodes:
                    lab.start_slurmd(node)
                if dbd and dbd.load and controller:
                    lab.define_qos()
                for node in nodes:
                    lab.wait_idle(node)
                yield lab
            finally:
                lab.stop()  # before the database it writes to

    def write_hosts(self, down: Iterable[str]) -> None:
        """Every lab host name is 127.0.0.1, except those of machines that are ``down``: they
        resolve nowhere, so nothing the lab starts can reach them.

        The machine's own name resolves too: srun and salloc run under it, and slurmctld
        resolves a client's name to answer it. Unresolved, each answer waits out getaddrinfo's
        retries (10 s per lookup on 24.11 when DNS says "try again"), holding the controller's
        locks, and steps hang at random."""
        skip = set(down)
        names = [*self.host_names, socket.gethostname()]
        self.hosts_file.write_text(
            "127.0.0.1 localhost\n"
            + "".join(f"127.0.0.1 {h}\n" for h in dict.fromkeys(names) if h not in skip)
        )

    # configuration ------------------------------------------------------------------
    def install_configs(self, gpu_files: int = 0) -> None:
        """Copy the rendered slurm/ files, pointing machine-local settings at the lab."""
        for path in (self.rendered / "slurm").iterdir():
            if path.is_file():  # programs in folders (healthcheck/, power/) are the test's
                shutil.copy(path, self.etc / path.name)
        w = self.work
        conf = (self.etc / "slurm.conf").read_text()
        conf = set_keys(
            conf,
            {
                "SlurmUser": "root",
                "SlurmctldPort": str(self.ports["ctld"]),
                "SlurmdPort": str(self.ports["slurmd"]),
                "StateSaveLocation": str(w / "state"),
                "SlurmdSpoolDir": str(w / "spool" / "%n"),
                "SlurmctldPidFile": str(w / "run" / "slurmctld.pid"),
                "SlurmdPidFile": str(w / "run" / "slurmd-%n.pid"),
                "SlurmctldLogFile": str(w / "log" / "slurmctld.log"),
                "SlurmdLogFile": str(w / "log" / "slurmd-%n.log"),
                "AuthInfo": f"socket={self.munge_socket}",
                "AccountingStoragePort": str(self.ports["dbd"]),
                # the munge socket for talking to slurmdbd is named here, not in AuthInfo
                "AccountingStoragePass": str(self.munge_socket),
                "SlurmctldDebug": "verbose",
                "SlurmdDebug": "verbose",
            },
        )
        # the JWT signing key is a secret the roles install, like munge's key: the lab makes
        # its own where the rendered AuthAltParameters name one (slurmctld stops without it)
        jwt = re.search(r"^AuthAltParameters=(.*)$", conf, re.M)
        if jwt and "jwt_key=" in jwt[1]:
            key = self.etc / "jwt_hs256.key"
            key.write_bytes(os.urandom(32))
            key.chmod(0o600)
            parameters = [p for p in jwt[1].split(",") if not p.startswith("jwt_key=")]
            conf = set_keys(conf, {"AuthAltParameters": ",".join([*parameters, f"jwt_key={key}"])})
        (self.etc / "slurm.conf").write_text(conf)
        gres = self.etc / "gres.conf"
        if gres.exists() and gpu_files:
            for index in range(gpu_files):
                # slurmd wants character devices; nothing opens them (major 195 is nvidia)
                os.mknod(w / "dev" / f"nvidia{index}", stat.S_IFCHR | 0o666, os.makedev(195, index))
            gres.write_text(gres.read_text().replace("/dev/nvidia", f"{w}/dev/nvidia"))

    def install_slurmdbd(self, database_port: int, password: str) -> None:
        path = self.etc / "slurmdbd.conf"
        conf = path.read_text()
        secret = re.search(r"StoragePass=\{\{ (\w+) \}\}", conf)
        assert secret, "slurmdbd.conf must reference its password, not contain it"
        conf = set_keys(
            conf,
            {
                "SlurmUser": "root",
                "DbdPort": str(self.ports["dbd"]),
                "StoragePort": str(database_port),
                "StoragePass": password,
                "LogFile": str(self.work / "log" / "slurmdbd.log"),
                "PidFile": str(self.work / "run" / "slurmdbd.pid"),
                "AuthInfo": f"socket={self.munge_socket}",
                "DebugLevel": "verbose",
            },
        )
        path.write_text(conf)
        path.chmod(0o600)

    # accounting ---------------------------------------------------------------------
    def load_accounts(self) -> None:
        """`sacctmgr load` of the rendered sacct.cfg, then the `add qos` lines of qos.sacctmgr
        (partitions name QoS slurmctld must find), as the roles do before slurmctld starts."""
        self.run("sacctmgr", "-i", "load", f"file={self.etc / 'sacct.cfg'}")
        for command in self.qos_lines(adding=True):
            out = self.run("sacctmgr", "-i", *command, check=False)
            assert "Adding QOS" in out or "Nothing new added" in out, out

    def qos_lines(self, adding: bool) -> list[list[str]]:
        """qos.sacctmgr's `add qos` lines, or (``adding`` false) its other lines."""
        lines = (self.etc / "qos.sacctmgr").read_text().splitlines()
        commands = [line.split() for line in lines if line and not line.startswith("#")]
        return [c for c in commands if (c[:2] == ["add", "qos"]) == adding]

    def define_qos(self) -> None:
        """The rest of qos.sacctmgr, once slurmctld has registered the GPU TRES its limits
        name, where slurm.conf's AccountingStorageTRES tracks GPUs."""
        tracked = re.search(r"^AccountingStorageTRES=(.*)$", self.slurm_conf(), re.M)
        if tracked and "gres/gpu" in tracked[1].lower().split(","):
            self.wait_for(
                lambda: (
                    "gres|gpu"
                    in self.run("sacctmgr", "-n", "-P", "show", "tres", "format=type,name")
                ),
                "GPU TRES registered by slurmctld",
            )
        for command in self.qos_lines(adding=False):
            assert "error" not in self.run("sacctmgr", "-i", *command).lower()

    def slurm_conf(self) -> str:
        """The lab's slurm.conf, as installed."""
        return (self.etc / "slurm.conf").read_text()

    # processes ----------------------------------------------------------------------
    def namespaced(self, hostname: str | None, *command: str) -> list[str]:
        """Run ``command`` with the lab's /etc/hosts and, if given, its own host name."""
        setup = f'mount --bind "{self.hosts_file}" /etc/hosts'
        for target, source in sorted(self.binds.items()):
            setup += f' && mount --bind "{source}" "{target}"'
        if hostname:
            setup += f" && hostname {hostname}"
        flags = ["--mount", "--propagation", "private"] + (["--uts"] if hostname else [])
        return ["unshare", *flags, "--", "sh", "-c", f'{setup} && exec "$@"', "sh", *command]

    def start(self, name: str, hostname: str | None, *command: str) -> None:
        log = open(self.work / "log" / f"{name}.out", "wb")  # noqa: SIM115 - owned by Popen
        self.processes[name] = subprocess.Popen(
            self.namespaced(hostname, *command),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )

    def start_munge(self) -> None:
        key = self.work / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.start(
            "munged",
            None,
            str(SBIN / "munged"),
            "--foreground",
            "--force",
            f"--socket={self.munge_socket}",
            f"--key-file={key}",
            f"--pid-file={self.work / 'munge' / 'munged.pid'}",
            f"--log-file={self.work / 'log' / 'munged.log'}",
            f"--seed-file={self.work / 'munge' / 'seed'}",
        )
        self.wait_for(lambda: self.munge_socket.exists(), "munged socket")

    def start_slurmdbd(self, hostname: str) -> None:
        self.start("slurmdbd", hostname, str(SBIN / "slurmdbd"), "-D")
        self.wait_for(lambda: self.port_open(self.ports["dbd"]), "slurmdbd port")

    def start_slurmctld(self, hostname: str) -> None:
        """Start the controller ``hostname``; the other SlurmctldHost machines are down.

        A starting primary asks every backup SlurmctldHost to relinquish control
        (REQUEST_CONTROL). Here every name is 127.0.0.1, so that request would reach the
        primary itself: slurmctld 22.05 sends it before it listens, and the connection fails
        as for a backup that is down, but from 23.11.2 slurmctld opens its port first (NEWS
        23.11.2: "Open all slurmctld listening ports at startup, and persist throughout") and
        obeys its own request by shutting down. So the controllers not started do not
        resolve, as on a site whose backup controller is off.
        """
        conf = str(self.etc / "slurm.conf")
        self.controllers.add(hostname)
        configured = re.findall(r"^SlurmctldHost=([^(\s]+)", Path(conf).read_text(), re.M)
        self.write_hosts(down=set(configured) - self.controllers)
        self.start("slurmctld", hostname, str(SBIN / "slurmctld"), "-D", "-c", "-i", "-f", conf)
        self.wait_for(lambda: self.port_open(self.ports["ctld"]), "slurmctld port")

    def start_slurmd(self, node: str) -> None:
        (self.work / "spool" / node).mkdir(exist_ok=True)
        conf = str(self.etc / "slurm.conf")
        self.start(f"slurmd-{node}", node, str(SBIN / "slurmd"), "-D", "-f", conf)

    def run(
        self, *command: str, check: bool = True, timeout: float = 60, stdin: str | None = None
    ) -> str:
        try:
            result = subprocess.run(
                self.namespaced(None, *command),
                capture_output=True,
                text=True,
                env=self.env,
                timeout=timeout,
                input=stdin,
            )
        except subprocess.TimeoutExpired as expired:
            output = (expired.stdout or b"") + (expired.stderr or b"")
            raise AssertionError(
                f"{' '.join(command)} did not finish within {timeout} s:\n"
                f"{output.decode(errors='replace') if isinstance(output, bytes) else output}"
                f"\n{self.logs()}"
            ) from None
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}"
                f"{result.stderr}\n{self.logs()}"
            )
        return result.stdout + result.stderr if not check else result.stdout

    def port_open(self, port: int) -> bool:
        with socket.socket() as probe:
            probe.settimeout(0.2)
            return probe.connect_ex(("127.0.0.1", port)) == 0

    def wait_for(self, condition: object, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise AssertionError(f"{name} exited ({process.returncode}):\n{self.logs()}")
            if condition():  # type: ignore[operator]
                return
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}:\n{self.logs()}")

    def wait_idle(self, node: str) -> None:
        """Wait until slurmctld reports ``node`` idle: registered, resumed, ready for jobs."""
        self.wait_for(lambda: "idle" in self.node_state(node), "idle node")

    def node_state(self, node: str) -> str:
        """``node``'s state as sinfo shows it (idle, mix, alloc, drain, ...).

        Read from the list of every node, not with ``sinfo -n NODE``: slurmctld answers a
        request for one node without first recounting the CPUs and TRES jobs hold, as it does
        for all nodes (proc_req.c: _slurm_rpc_dump_node_single skips
        select_g_select_nodeinfo_set_all). slurmctld 24.11 showed a node whose jobs had all
        ended as mixed to ``sinfo -n`` for 10 s to over two minutes, idle to ``sinfo -N``.
        """
        rows = [line.split() for line in self.run("sinfo", "-h", "-N", "-o", "%N %t").splitlines()]
        return next((row[1] for row in rows if row[:1] == [node]), "")

    def logs(self) -> str:
        parts = []
        for path in sorted((self.work / "log").iterdir()):
            tail = path.read_text(errors="replace").splitlines()[-25:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
