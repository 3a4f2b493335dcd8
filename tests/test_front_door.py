"""The README's render command passes on a fresh Debian 12 and a fresh Debian 13 with the
distribution's own python3, which is externally managed (PEP 668) and has no venv module until
python3-venv is installed: the command is run, as the README writes it, in a container of a
debootstrapped minimal Debian (molecule/build-image.sh) holding a copy of this checkout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("podman") and shutil.which("debootstrap")),
        reason="needs podman and debootstrap (scripts/test.sh installs them)",
    ),
]


def _readme_render_command() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Two commands\n") :]
    section = section[: section.index("\n## ", 1)]
    (command,) = [
        line.strip()
        for line in section.splitlines()
        if line.startswith("    ") and "render" in line
    ]
    return command


def _checkout_copy(destination: Path) -> None:
    """The files a clone has: tracked ones and new ones git does not ignore (no .venv/)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / name.decode()
        target = destination / name.decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        elif source.is_file():
            shutil.copy2(source, target)


@pytest.mark.parametrize("debian", ["12", "13"])
def test_the_readme_render_command_passes_with_debians_own_python(
    debian: str, tmp_path: Path
) -> None:
    built = subprocess.run(
        ["bash", str(ROOT / "molecule" / "build-image.sh")],
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "ESTATEGEN_DEBIAN": debian},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    checkout = tmp_path / "estategen"
    _checkout_copy(checkout)
    command = _readme_render_command()
    script = (
        # what a fresh machine's python3 is: Debian's, externally managed, without ensurepip
        'test "$(command -v python3)" = /usr/bin/python3'
        " && test -e /usr/lib/python3*/EXTERNALLY-MANAGED"
        " && ! python3 -c 'import ensurepip' 2>/dev/null"
        " && cp -a /src /root/estategen && cd /root/estategen"
        f" && {command} && test -s build/lab/slurm/slurm.conf"
    )
    result = subprocess.run(
        [
            "podman", "run", "--rm",
            "-v", f"{checkout}:/src:ro",
            # the host's trust store, for a network whose TLS is inspected
            "-v", "/etc/ssl/certs/ca-certificates.crt:/etc/host-ca-certificates.crt:ro",
            "-e", "PIP_CERT=/etc/host-ca-certificates.crt",
            f"localhost/estategen-debian:{debian}",
            "bash", "-c", script,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
    assert result.returncode == 0, tail
    assert f"installed in .venv/ with Python 3.{11 if debian == '12' else 13}" in result.stdout
