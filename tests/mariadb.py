"""A throwaway MariaDB server in a temp folder, on a free localhost port."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from slurmlab import free_port


def have_mariadb() -> bool:
    return bool(shutil.which("mariadbd") and shutil.which("mariadb-install-db"))


class MariaDB:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.socket = folder / "mysqld.sock"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        data = self.folder / "data"
        data.mkdir(parents=True)
        subprocess.run(
            [
                "mariadb-install-db",
                f"--datadir={data}",
                "--user=root",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
        )
        log = open(self.folder / "mariadbd.log", "wb")  # noqa: SIM115 - owned by Popen
        self.process = subprocess.Popen(
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={data}",
                f"--socket={self.socket}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                "--user=root",
                f"--pid-file={self.folder / 'mariadbd.pid'}",
                "--innodb-buffer-pool-size=64M",
                "--skip-log-bin",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while not self.socket.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((self.folder / "mariadbd.log").read_text())
            time.sleep(0.2)

    def sql(self, statement: str) -> None:
        subprocess.run(
            ["mariadb", f"--socket={self.socket}", "-uroot", "-e", statement],
            check=True,
            capture_output=True,
        )

    def create(self, database: str, user: str, password: str) -> None:
        self.sql(
            f"CREATE DATABASE {database}; "
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'; "
            f"CREATE USER '{user}'@'localhost' IDENTIFIED BY '{password}'; "
            f"GRANT ALL ON {database}.* TO '{user}'@'%'; "
            f"GRANT ALL ON {database}.* TO '{user}'@'localhost';"
        )

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
