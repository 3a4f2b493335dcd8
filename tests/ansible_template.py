"""Render one role template with Ansible itself, with the rendered group variables."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook")


def template(ansible: Path, pool_vars: str | None, src: str, dest: Path) -> None:
    """``ansible.builtin.template`` of ``ansible/roles/<src>`` to ``dest`` on localhost, with
    ``group_vars/all/estate.yml``, the pool's group variables and the role's defaults."""
    role = src.split("/")[0]
    vars_files = [ansible / "group_vars" / "all" / "estate.yml"]
    if pool_vars:
        vars_files.append(ansible / "group_vars" / f"{pool_vars}.yml")
    vars_files.append(ansible / "roles" / role / "defaults" / "main.yml")
    play = {
        "name": f"Render {src}",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars_files": [str(path) for path in vars_files],
        "tasks": [
            {
                "name": "Template",
                "ansible.builtin.template": {
                    "src": str(ansible / "roles" / src),
                    "dest": str(dest),
                    "mode": "0644",
                },
            }
        ],
    }
    playbook = dest.parent / f"{dest.name}.playbook.yml"
    playbook.write_text(yaml.safe_dump([play], sort_keys=False))
    assert ANSIBLE_PLAYBOOK, "ansible-playbook is not installed"
    result = subprocess.run(
        [
            ANSIBLE_PLAYBOOK,
            "-i",
            "localhost,",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(playbook),
        ],
        env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "False"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    playbook.unlink()
