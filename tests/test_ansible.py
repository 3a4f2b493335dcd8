"""The rendered ansible/ tree: self-contained, lint-clean, and grouped as the model says."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import ansible_collections
import pytest
import yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements

from estategen import hostlist
from estategen.facts import SLURM_APT_KEYRING
from estategen.load import parse_blueprint
from estategen.pipeline import validate_document, validate_file
from estategen.render import render
from estategen.renderers.ansible import ansible_patterns, group_name

from conftest import BLUEPRINTS, run_cli

EXAMPLES = ["lab", "campus"]
ROLES = [
    "common",
    "munge",
    "slurmdbd",
    "slurm_controller",
    "slurm_compute",
    "slurm_packages",
    "nvidia_gpu",
    "k8s_gpu_node",
    "dcgm_exporter",
    "slurm_exporter",
    "node_exporter",
    "storage_client",
]
needs_ansible = pytest.mark.skipif(
    not shutil.which("ansible-playbook") or not shutil.which("ansible-lint"),
    reason="needs ansible and ansible-lint",
)


@pytest.fixture(scope="module", params=EXAMPLES)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rendered output of one example; its folder name is the example's name."""
    out = tmp_path_factory.mktemp("render") / request.param
    assert run_cli("render", BLUEPRINTS / f"{request.param}.yaml", "-o", out).returncode == 0
    return out


def expand_patterns(patterns: dict[str, None] | None) -> set[str]:
    """Ansible ``name-[01:04]`` patterns back to host names."""
    hosts: set[str] = set()
    for pattern in patterns or {}:
        hosts.update(hostlist.expand(pattern.replace(":", "-")))
    return hosts


def group_hosts(inventory: dict, group: str) -> set[str]:
    node = inventory["all"]["children"][group]
    hosts = expand_patterns(node.get("hosts"))
    for child in node.get("children") or {}:
        hosts |= group_hosts(inventory, child)
    return hosts


def test_ansible_patterns_split_gapped_ranges() -> None:
    names = ["gpu-01", "gpu-02", "gpu-03", "gpu-07", "login"]
    assert ansible_patterns(names) == ["gpu-[01:03]", "gpu-07", "login"]


def test_ansible_patterns_split_a_padded_range_where_it_gains_a_digit() -> None:
    assert ansible_patterns(hostlist.expand("gpu-[01-100]")) == ["gpu-[01:99]", "gpu-100"]
    assert ansible_patterns(hostlist.expand("n[001-1002]")) == ["n[001:999]", "n[1000:1002]"]


def test_ansible_patterns_keep_ranges_ansible_reads_whole() -> None:
    assert ansible_patterns(hostlist.expand("gpu-[08-11]")) == ["gpu-[08:11]"]
    assert ansible_patterns(hostlist.expand("n[8-12]")) == ["n[8:12]"]
    assert ansible_patterns(hostlist.expand("n[0998-1001]")) == ["n[0998:1001]"]


def test_inventory_groups_match_the_model(rendered: Path) -> None:
    estate = validate_file(BLUEPRINTS / f"{rendered.name}.yaml").estate
    inventory = yaml.safe_load((rendered / "ansible" / "inventory.yml").read_text())
    for pool in estate.node_pools:
        if pool.managed:
            assert group_name("pool", pool.name) not in inventory["all"]["children"]
            continue
        assert group_hosts(inventory, group_name("pool", pool.name)) == set(pool.hosts)
    slurm_hosts = {h for p in estate.slurm_pools for h in p.hosts}
    k8s_gpu = {h for p in estate.kubernetes_pools if p.gpus and not p.managed for h in p.hosts}
    assert group_hosts(inventory, "slurm_compute") == slurm_hosts
    assert group_hosts(inventory, "slurm_controller") == set(estate.slurm.controllers)
    assert group_hosts(inventory, "k8s_gpu_nodes") == k8s_gpu
    assert not slurm_hosts & k8s_gpu
    if estate.slurm.accounting:
        assert group_hosts(inventory, "slurmdbd") == {estate.slurm.accounting.host}


def test_roles_install_the_rendered_slurm_files_byte_for_byte(rendered: Path) -> None:
    for path in (rendered / "slurm").iterdir():
        copy = rendered / "ansible" / "files" / "slurm" / path.name
        assert copy.read_bytes() == path.read_bytes()
        assert copy.stat().st_mode == path.stat().st_mode


def test_every_role_has_defaults_handlers_meta_and_a_readme(rendered: Path) -> None:
    for role in ROLES:
        folder = rendered / "ansible" / "roles" / role
        for part in ("defaults/main.yml", "handlers/main.yml", "meta/main.yml", "tasks/main.yml"):
            assert (folder / part).is_file(), f"{role}/{part}"
        assert (folder / "README.md").read_text().startswith(f"# {role}")


def test_no_secret_value_is_rendered(rendered: Path) -> None:
    estate_vars = (rendered / "ansible" / "group_vars" / "all" / "estate.yml").read_text()
    assert "password:" not in estate_vars
    dbd = rendered / "ansible" / "files" / "slurm" / "slurmdbd.conf"
    if dbd.exists():
        assert "StoragePass={{ slurmdbd_db }}" in dbd.read_text()


def test_kubernetes_nodes_register_with_pool_labels(rendered: Path) -> None:
    estate = validate_file(BLUEPRINTS / f"{rendered.name}.yaml").estate
    for pool in estate.kubernetes_pools:
        if pool.managed:
            continue
        data = yaml.safe_load(
            (
                rendered / "ansible" / "group_vars" / f"{group_name('pool', pool.name)}.yml"
            ).read_text()
        )
        for key, value in pool.labels.items():
            assert data["pool_node_labels"][key] == value
        assert data["pool_node_labels"]["nvidia.com/device-plugin.config"] == pool.name
        assert len(data["pool_node_taints"]) == len(pool.taints)


@needs_ansible
def test_site_passes_syntax_check(rendered: Path) -> None:
    result = subprocess.run(
        ["ansible-playbook", "--syntax-check", "site.yml"],
        cwd=rendered / "ansible",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_ansible
def test_ansible_lint_production_profile_passes(rendered: Path) -> None:
    result = subprocess.run(
        ["ansible-lint", "--profile", "production", "--offline", "--nocolor", "--format", "pep8"],
        cwd=rendered / "ansible",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# Module names in tasks, and plugin names in Jinja (lookup/query, filters, tests), that
# belong to a collection: namespace.collection.name.
_FQCN = re.compile(r"([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.[a-z_][a-z0-9_]*")
_JINJA_PLUGIN = re.compile(
    r"(?:\b(?:lookup|query|q)\(\s*['\"]|\|\s*|\bis\s+(?:not\s+)?)"
    r"([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.[a-z_][a-z0-9_]*"
)
_CORE = {"ansible.builtin", "ansible.legacy"}


def _task_modules(node: object) -> Iterator[str]:
    """Keys of every task (blocks included) that name a module by its full name."""
    if isinstance(node, list):
        for item in node:
            yield from _task_modules(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            match = _FQCN.fullmatch(str(key))
            if match:
                yield f"{match[1]}.{match[2]}"
            if key in ("block", "rescue", "always", "tasks", "handlers", "pre_tasks", "post_tasks"):
                yield from _task_modules(value)


def collections_used(tree: Path) -> set[str]:
    """Collections beyond ansible-core that the playbooks and roles under tree name."""
    used: set[str] = set()
    for path in sorted(tree.rglob("*")):
        if not path.is_file() or path.suffix not in (".yml", ".yaml", ".j2"):
            continue
        text = path.read_text()
        used.update(f"{m[1]}.{m[2]}" for m in _JINJA_PLUGIN.finditer(text))
        if path.suffix != ".j2" and (
            path.parent.name in ("tasks", "handlers") or path == tree / "site.yml"
        ):
            used.update(_task_modules(yaml.safe_load(text)))
    return used - _CORE


def declared_collections(ansible_dir: Path) -> dict[str, str]:
    """The rendered requirements.yml: collection name -> version bounds."""
    data = yaml.safe_load((ansible_dir / "requirements.yml").read_text())
    return {entry["name"]: entry["version"] for entry in data["collections"]}


def test_collection_scan_sees_modules_blocks_lookups_filters_and_tests(tmp_path: Path) -> None:
    tasks = tmp_path / "roles" / "x" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text(
        "- name: a\n  community.general.ufw: {state: enabled}\n"
        "- name: b\n  block:\n    - name: c\n      ansible.builtin.debug:\n"
        "        msg: \"{{ lookup('community.hashi_vault.hashi_vault', 'x') }}\"\n"
        "  rescue:\n    - name: d\n      kubernetes.core.k8s: {state: present}\n"
        '- name: e\n  ansible.builtin.debug:\n    msg: "{{ y | ansible.utils.ipaddr }}"\n'
        "  when: z is not community.crypto.x\n"
    )
    assert collections_used(tmp_path) == {
        "community.general",
        "community.hashi_vault",
        "kubernetes.core",
        "ansible.utils",
        "community.crypto",
    }


def test_requirements_declare_exactly_the_collections_the_roles_use(rendered: Path) -> None:
    ansible_dir = rendered / "ansible"
    declared = declared_collections(ansible_dir)
    assert set(declared) == collections_used(ansible_dir)
    for name, bounds in declared.items():
        assert re.fullmatch(r">=\d+\.\d+\.\d+,<\d+\.0\.0", bounds), (name, bounds)


def test_group_vars_name_the_slurm_release_the_roles_install(rendered: Path) -> None:
    estate = validate_file(BLUEPRINTS / f"{rendered.name}.yaml").estate
    estate_vars = yaml.safe_load(
        (rendered / "ansible" / "group_vars" / "all" / "estate.yml").read_text()
    )
    assert estate_vars["slurm_version"] == estate.versions.slurm.text
    defaults = yaml.safe_load(
        (rendered / "ansible" / "roles" / "slurm_packages" / "defaults" / "main.yml").read_text()
    )
    assert defaults["slurm_packages_release"] == "{{ slurm_version }}"


PACKAGES_ESTATE = """\
estate: pkg
node_pools:
  - {name: cpu, scheduler: slurm, hosts: "cpu-[01-02]", cpu: {sockets: 1, cores_per_socket: 4},
     memory_gb: 16}
slurm:
  controllers: [ctl-01]
  partitions: [{name: batch, pools: [cpu], default: true}]
"""


def packages_vars(packages: str, extra: str = "", version: str = "") -> dict[str, object]:
    """The slurm_packages variables group_vars carry for a slurm.packages block."""
    text = PACKAGES_ESTATE.replace(
        "  controllers:", f"  packages: {packages}\n{extra}  controllers:"
    )
    if version:
        text += f'versions: {{slurm: "{version}"}}\n'
    estate = validate_document(parse_blueprint(text.encode(), "pkg.yaml")).estate
    content = render(estate)["ansible/group_vars/all/estate.yml"].content
    estate_vars: dict[str, object] = yaml.safe_load(content)
    return {
        k: v for k, v in estate_vars.items() if k.startswith(("slurm_packages_", "slurm_version"))
    }


def test_group_vars_give_the_role_the_site_repository_and_its_key() -> None:
    line = "deb [signed-by=/etc/apt/keyrings/slurm.asc] https://repo.example.org/slurm trixie main"
    packages = (
        f'{{source: site, apt_repository: "{line}", apt_key_url: "https://repo.example.org/k.asc"}}'
    )
    assert packages_vars(packages, version="25.05") == {
        "slurm_version": "25.05",
        "slurm_packages_apt_repository": line,
        "slurm_packages_apt_key_url": "https://repo.example.org/k.asc",
        "slurm_packages_extra_names": [],
    }


def test_group_vars_install_debians_own_packages_of_the_sources_release() -> None:
    assert packages_vars("{source: debian-12}") == {
        "slurm_version": "22.05",
        "slurm_packages_apt_repository": "",
        "slurm_packages_apt_key_url": "",
        "slurm_packages_extra_names": [],
    }


def test_the_rest_api_on_debian_13_installs_its_jwt_plugin_package() -> None:
    rest = "  rest_api: {host: ctl-01, jwt_key: {secret: slurm_jwt}}\n"
    assert packages_vars("{source: debian-13}", rest)["slurm_packages_extra_names"] == [
        "slurm-wlm-jwt-plugin"
    ]
    assert packages_vars("{source: debian-13}")["slurm_packages_extra_names"] == []


def test_the_role_saves_the_signing_key_where_the_checks_expect_it() -> None:
    """checks.slurm_package_source asks the source line for signed-by= of this file."""
    role = Path(__file__).resolve().parent.parent / "playbooks" / "roles" / "slurm_packages"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert defaults["slurm_packages_apt_keyring"] == SLURM_APT_KEYRING
    tasks = yaml.safe_load((role / "tasks" / "main.yml").read_text())
    (fetch,) = [task for task in tasks if "ansible.builtin.get_url" in task]
    assert fetch["ansible.builtin.get_url"]["dest"] == "{{ slurm_packages_apt_keyring }}"


def _bundled_collection(name: str) -> Path:
    """Where the full `ansible` package keeps its copy of a collection."""
    namespace, collection = name.split(".")
    for root in ansible_collections.__path__:
        folder = Path(root) / namespace / collection
        if (folder / "MANIFEST.json").is_file():
            return folder
    raise AssertionError(f"the ansible package bundles no {name}")


def core_only_env(collections_path: Path) -> dict[str, str]:
    """ansible-core with only the collections under collections_path: the ones the full
    `ansible` package installs next to it on sys.path are not searched."""
    return {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
        "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
        "ANSIBLE_NOCOLOR": "1",
    }


@pytest.fixture(scope="module")
def declared_only(rendered: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A collections folder holding exactly the collections requirements.yml declares,
    installed with ansible-galaxy from the copies the `ansible` package bundles (Galaxy is
    not reachable here), each checked to be within the declared bounds."""
    folder = tmp_path_factory.mktemp("collections")
    sources = []
    for name, bounds in declared_collections(rendered / "ansible").items():
        source = _bundled_collection(name)
        version = json.loads((source / "MANIFEST.json").read_text())["collection_info"]["version"]
        assert meets_requirements(version, bounds), f"bundled {name} {version} is not {bounds}"
        sources.append({"name": str(source), "type": "dir"})
    requirements = folder / "from-bundled.yml"
    requirements.write_text(yaml.safe_dump({"collections": sources}))
    result = subprocess.run(
        [
            "ansible-galaxy",
            "collection",
            "install",
            "--offline",
            "-p",
            str(folder),
            "-r",
            str(requirements),
        ],
        env=core_only_env(folder),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


def _syntax_check(ansible_dir: Path, collections_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ansible-playbook", "--syntax-check", "site.yml"],
        cwd=ansible_dir,
        env=core_only_env(collections_path),
        capture_output=True,
        text=True,
    )


@needs_ansible
def test_site_passes_syntax_check_with_ansible_core_and_the_declared_collections(
    rendered: Path, declared_only: Path
) -> None:
    installed = {
        f"{namespace.name}.{collection.name}"
        for namespace in (declared_only / "ansible_collections").iterdir()
        for collection in namespace.iterdir()
    }
    assert installed == set(declared_collections(rendered / "ansible"))
    result = _syntax_check(rendered / "ansible", declared_only)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_ansible
def test_site_fails_syntax_check_without_the_declared_collections(
    rendered: Path, tmp_path: Path
) -> None:
    result = _syntax_check(rendered / "ansible", tmp_path)
    assert result.returncode != 0
    assert "couldn't resolve module/action 'ansible.posix.mount'" in result.stdout + result.stderr


def _debian_major() -> str | None:
    try:
        return Path("/etc/debian_version").read_text().split(".")[0]
    except OSError:
        return None


needs_local_slurm = pytest.mark.skipif(
    not shutil.which("slurmctld") or not shutil.which("ansible-playbook") or not _debian_major(),
    reason="needs Debian's slurmctld and ansible-playbook",
)


def _installed_release() -> str:
    """The Slurm release this machine runs, as slurmctld -V reports it."""
    output = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True).stdout
    match = re.search(r"[0-9]+\.[0-9]+", output)
    assert match, output
    return match[0]


def _run_slurm_packages(
    rendered: Path, tmp_path: Path, release: str, **role_vars: object
) -> subprocess.CompletedProcess[str]:
    """The rendered slurm_packages role, on this machine, in check mode (nothing installed)."""
    playbook = tmp_path / "slurm-packages.yml"
    role = {
        "role": "slurm_packages",
        "vars": {
            "slurm_packages_names": ["slurmctld", "slurm-client"],
            "slurm_packages_version_command": ["slurmctld", "-V"],
            **role_vars,
        },
    }
    play = {"name": "Slurm packages", "hosts": "localhost", "connection": "local", "roles": [role]}
    playbook.write_text(yaml.safe_dump([play]))
    return subprocess.run(
        [
            "ansible-playbook",
            "--check",
            "-e",
            json.dumps({"slurm_version": release}),
            str(playbook),
        ],
        env={
            **os.environ,
            "ANSIBLE_ROLES_PATH": str(rendered / "ansible" / "roles"),
            "ANSIBLE_NOCOLOR": "1",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def rendered_lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render") / "lab"
    assert run_cli("render", BLUEPRINTS / "lab.yaml", "-o", out).returncode == 0
    return out


@pytest.mark.slow
@needs_local_slurm
def test_slurm_packages_accept_the_release_this_machine_runs(
    rendered_lab: Path, tmp_path: Path
) -> None:
    result = _run_slurm_packages(rendered_lab, tmp_path, _installed_release())
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@needs_local_slurm
def test_slurm_packages_stop_before_installing_a_release_debian_does_not_ship(
    rendered_lab: Path, tmp_path: Path
) -> None:
    shipped = _installed_release()
    wanted = "24.05" if shipped != "24.05" else "23.11"
    result = _run_slurm_packages(rendered_lab, tmp_path, wanted)
    assert result.returncode != 0
    assert (
        f"The rendered Slurm configuration is for Slurm {wanted} (versions.slurm in the "
        f"blueprint), but Debian {_debian_major()} ships Slurm {shipped}." in result.stdout
    ), result.stdout
    assert "slurm_packages : Install the Slurm packages" not in result.stdout


@pytest.mark.slow
@needs_local_slurm
def test_slurm_packages_stop_when_the_installed_daemon_is_another_release(
    rendered_lab: Path, tmp_path: Path
) -> None:
    """A hand-built slurmctld 23.11 shadowing Debian's package: the run stops with both versions."""
    shipped = _installed_release()
    other = "23.11" if shipped != "23.11" else "24.05"
    hand_built = tmp_path / "slurmctld"
    hand_built.write_text(f"#!/bin/sh\necho 'slurm {other}.4'\n")
    hand_built.chmod(0o755)
    result = _run_slurm_packages(
        rendered_lab, tmp_path, shipped, slurm_packages_version_command=[str(hand_built), "-V"]
    )
    assert result.returncode != 0
    assert (
        f'-V` reports "slurm {other}.4", but the rendered Slurm configuration is for '
        f"Slurm {shipped}" in result.stdout
    ), result.stdout
