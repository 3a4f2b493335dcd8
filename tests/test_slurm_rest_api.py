"""slurm.rest_api on this machine's real Slurm: what it accepts, what it refuses, and why.

Debian 12's slurm-wlm 22.05 has slurmrestd's `rest_auth_jwt.so` but no `auth_jwt.so`, so the
rendered `AuthAltTypes=auth/jwt` stops slurmctld there, and the roles must stop first with a
clear message; Debian 13's 24.11 has it (slurm-wlm-jwt-plugin), and slurmctld runs on the
rendered AuthAlt* lines with a key the lab makes. slurmrestd itself runs on both: as an
unprivileged user, over `rest_auth/local` on a unix socket, it answers a ping, and it refuses
a request that carries no credentials. Where auth_jwt.so is installed, slurmrestd also runs as
the rendered role starts it (its auth plugins, SLURM_JWT=daemon) and serves requests that carry
a token: one from `scontrol token`, and one a site's portal signs with the rendered key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from slurmlab import SBIN, SlurmLab, free_port, have_slurm, installed_slurm_version, set_keys

PLUGIN_DIRS = [Path("/usr/lib/x86_64-linux-gnu/slurm-wlm"), Path("/usr/lib64/slurm")]
HAS_AUTH_JWT = any((d / "auth_jwt.so").exists() for d in PLUGIN_DIRS)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]
needs_no_auth_jwt = pytest.mark.skipif(
    HAS_AUTH_JWT, reason="this Slurm has auth_jwt.so: the refusal cannot be shown here"
)
NODE = "rest-node-01"
# an unprivileged user every Debian has, standing in for slurm.rest_api.user
SERVICE_USER = "nobody"
# The API version each proven release's slurmrestd serves its ping at: 22.05's
# openapi/v0.0.38; 24.11's openapi/slurmctld with data_parser v0.0.40 to v0.0.42 (RELEASE_NOTES
# 24.11: "Removed v0.0.39 plugins"), the newest of them.
API_VERSIONS = {"22.05": "v0.0.38", "24.11": "v0.0.42"}


def ping(address: str) -> str:
    return f"http://{address}/slurm/{API_VERSIONS[installed_slurm_version()]}/ping"


def blueprint() -> str:
    return textwrap.dedent(
        f"""\
        estate: restlab
        versions: {{slurm: "{installed_slurm_version()}"}}
        node_pools:
          - name: cpu
            scheduler: slurm
            hosts: {NODE}
            cpu: {{sockets: 1, cores_per_socket: 1}}
            memory_gb: 2
        slurm:
          # a site that says its Slurm has auth_jwt.so (validate refuses the REST API on Debian
          # 12's own packages), on hosts that run Debian's: what the roles catch
          packages:
            source: site
            apt_repository: "deb https://slurm.example.org/debian bookworm main"
            jwt: true
          controllers: [rest-ctl]
          partitions:
            - {{name: batch, pools: [cpu], default: true}}
          rest_api: {{host: rest-ctl, jwt_key: {{secret: slurm_jwt}}}}
        """
    )


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    """A folder every user may traverse: slurmrestd runs as an unprivileged user and must reach
    the lab's munge socket and slurm.conf (pytest's own folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="estategen-rest-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def rendered(work: Path) -> Path:
    (work / "restlab.yaml").write_text(blueprint())
    result = run_cli("render", work / "restlab.yaml", "-o", work / "out")
    assert result.returncode == 0, result.stderr + result.stdout
    return work / "out"


def test_the_rendered_configuration_asks_for_jwt(rendered: Path) -> None:
    conf = (rendered / "slurm" / "slurm.conf").read_text().splitlines()
    assert "AuthAltTypes=auth/jwt" in conf
    assert "AuthAltParameters=jwt_key=/etc/slurm/jwt_hs256.key" in conf


@needs_no_auth_jwt
def test_slurmctld_without_auth_jwt_exits_on_the_rendered_configuration(
    rendered: Path, work: Path
) -> None:
    """Why the roles check: this is what would happen on the hosts."""
    lab = SlurmLab(rendered, work / "refused", [NODE, "rest-ctl"])
    try:
        lab.install_configs()
        lab.start_munge()
        lab.start("slurmctld", "rest-ctl", str(SBIN / "slurmctld"), "-D", "-i")
        process = lab.processes["slurmctld"]
        assert process.wait(timeout=30) != 0
        assert "cannot find auth plugin for auth/jwt" in lab.logs()
    finally:
        lab.stop()


def run_slurm_packages(rendered: Path, work: Path, rest_api: object) -> str:
    """The rendered slurm_packages role on this machine, in check mode (nothing installed)."""
    playbook = work / "packages.yml"
    play = {
        "name": "Slurm packages",
        "hosts": "localhost",
        "connection": "local",
        "roles": [
            {
                "role": "slurm_packages",
                "vars": {
                    "slurm_packages_names": ["slurmctld", "slurm-client"],
                    "slurm_packages_version_command": ["slurmctld", "-V"],
                },
            }
        ],
    }
    playbook.write_text(yaml.safe_dump([play]))
    variables = {"slurm_version": installed_slurm_version(), "slurm_rest_api": rest_api}
    result = subprocess.run(
        ["ansible-playbook", "--check", "-e", json.dumps(variables), str(playbook)],
        env={
            **os.environ,
            "ANSIBLE_ROLES_PATH": str(rendered / "ansible" / "roles"),
            "ANSIBLE_NOCOLOR": "1",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    return f"rc={result.returncode}\n{result.stdout}{result.stderr}"


@needs_no_auth_jwt
@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="needs ansible-playbook")
def test_the_roles_stop_with_a_clear_message_where_slurm_has_no_jwt_plugin(
    rendered: Path, work: Path
) -> None:
    estate_vars = yaml.safe_load((rendered / "ansible/group_vars/all/estate.yml").read_text())
    refused = run_slurm_packages(rendered, work, estate_vars["slurm_rest_api"])
    assert refused.startswith("rc=2"), refused
    assert "the Slurm installed here has no auth_jwt.so" in refused, refused
    assert 'would exit with "cannot find auth plugin for auth/jwt"' in refused, refused
    # the same role on the same machine goes through without a REST API
    assert run_slurm_packages(rendered, work, None).startswith("rc=0")


@pytest.fixture(scope="module")
def restd(rendered: Path, work: Path) -> Iterator[tuple[SlurmLab, Path, int]]:
    """slurmctld and slurmrestd on the rendered files, with the JWT keys taken out (this
    Slurm has no auth_jwt.so), slurmrestd as an unprivileged user with rest_auth/local."""
    if not shutil.which("slurmrestd") or not shutil.which("curl"):
        pytest.skip("needs slurmrestd and curl")
    socket = work / "run" / "restd" / "slurmrestd.socket"
    port = free_port()

    def without_jwt(lab: SlurmLab) -> None:
        if not HAS_AUTH_JWT:
            conf = lab.etc / "slurm.conf"
            conf.write_text(
                set_keys(conf.read_text(), {}, drop=["AuthAltTypes", "AuthAltParameters"])
            )
        socket.parent.mkdir()
        shutil.chown(socket.parent, SERVICE_USER)

    with SlurmLab.running(
        rendered, work / "run", [NODE, "rest-ctl"], controller="rest-ctl", configure=without_jwt
    ) as lab:
        lab.start(
            "slurmrestd",
            None,
            *as_service_user(),
            str(SBIN / "slurmrestd"),
            "-a",
            "rest_auth/local",
            "-s",
            openapi_plugins(rendered)["slurmctld"],  # this estate has no slurmdbd
            f"unix:{socket}",
            f"127.0.0.1:{port}",
        )
        lab.wait_for(socket.exists, "slurmrestd's socket")
        yield lab, socket, port


def role_defaults(rendered: Path) -> dict[str, Any]:
    """The rendered slurmrestd role's defaults (defaults/main.yml)."""
    defaults = rendered / "ansible/roles/slurmrestd/defaults/main.yml"
    loaded: dict[str, Any] = yaml.safe_load(defaults.read_text())
    return loaded


def openapi_plugins(rendered: Path) -> dict[str, str]:
    """The endpoint plugins the rendered slurmrestd role loads for this Slurm release."""
    plugins: dict[str, dict[str, str]] = role_defaults(rendered)["slurmrestd_openapi_plugins"]
    return plugins[installed_slurm_version()]


def as_service_user() -> list[str]:
    return ["setpriv", f"--reuid={SERVICE_USER}", "--regid=nogroup", "--clear-groups", "--"]


def curl(lab: SlurmLab, *args: str, user: bool = True) -> tuple[int, str]:
    """HTTP status and body of a curl request, run as slurmrestd's user or as root."""
    command = [*(as_service_user() if user else []), "curl", "-s", "-w", "\n%{http_code}", *args]
    out = lab.run(*command, check=False)
    body, _, status = out.rstrip("\n").rpartition("\n")
    return int(status or 0), body


def test_slurmrestd_answers_a_ping_over_local_authentication(
    restd: tuple[SlurmLab, Path, int],
) -> None:
    lab, socket, _ = restd
    status, body = curl(lab, "--unix-socket", str(socket), ping("localhost"))
    assert status == 200, body
    pings = json.loads(body)["pings"]
    assert [p["hostname"] for p in pings] == ["rest-ctl"], body
    # the controller answered: v0.0.38 says "ping": "UP"; v0.0.42 says "responding": true
    # (CONTROLLER_PING in src/plugins/data_parser/v0.0.42/parsers.c at slurm-24-11-5-1)
    if API_VERSIONS[installed_slurm_version()] == "v0.0.38":
        assert pings[0]["ping"] == "UP", body
    else:
        assert pings[0]["responding"] is True, body


def test_slurmrestd_refuses_a_request_without_credentials(
    restd: tuple[SlurmLab, Path, int],
) -> None:
    lab, _, port = restd
    status, body = curl(lab, ping(f"127.0.0.1:{port}"))
    assert (status, body) == (401, "Authentication failure")


def test_slurmrestd_refuses_to_run_as_root(rendered: Path, work: Path) -> None:
    lab = SlurmLab(rendered, work / "root", [NODE, "rest-ctl"])
    lab.install_configs()
    result = subprocess.run(
        [
            str(SBIN / "slurmrestd"),
            "-a",
            "rest_auth/local",
            "-s",
            openapi_plugins(rendered)["slurmctld"],
            f"unix:{work / 'root' / 'sock'}",
        ],
        env=lab.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert "root" in result.stderr.lower(), result.stderr


needs_ansible = pytest.mark.skipif(
    not shutil.which("ansible-playbook") or not shutil.which("ansible-lint"),
    reason="needs ansible-playbook and ansible-lint",
)


@needs_ansible
def test_the_slurmrestd_unit_runs_as_its_user_with_tokens_on_its_port(
    rendered: Path, work: Path
) -> None:
    """The role's systemd drop-in, as Ansible templates it from the rendered variables."""
    ansible = rendered / "ansible"
    template = ansible / "roles/slurmrestd/templates/estategen.conf.j2"
    dropin = work / "dropin.conf"
    play = {
        "name": "Template the drop-in",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars_files": [
            str(ansible / "group_vars/all/estate.yml"),
            str(ansible / "roles/slurmrestd/defaults/main.yml"),
        ],
        "vars": {"ansible_python_interpreter": sys.executable},
        "tasks": [
            {
                "name": "Template it",
                "ansible.builtin.template": {"src": str(template), "dest": str(dropin)},
            }
        ],
    }
    playbook = work / "dropin.yml"
    playbook.write_text(yaml.safe_dump([play]))
    result = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", str(playbook)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dropin.read_text().splitlines()
    assert "User=slurmrestd" in lines and "Group=slurmrestd" in lines
    assert "Environment=SLURM_JWT=daemon" in lines
    plugins = openapi_plugins(rendered)["slurmctld"]
    assert f"ExecStart=/usr/sbin/slurmrestd -a rest_auth/jwt -s {plugins} 0.0.0.0:6820" in lines, (
        lines
    )


@needs_ansible
def test_the_rendered_site_with_a_rest_api_passes_ansible_lint(rendered: Path) -> None:
    ansible = rendered / "ansible"
    site = yaml.safe_load((ansible / "site.yml").read_text())
    (play,) = [p for p in site if p["hosts"] == "slurmrestd"]
    assert play["roles"] == [{"role": "slurmrestd", "tags": ["slurmrestd"]}]
    assert any(
        p["hosts"].endswith(":slurmrestd") and p["roles"][0]["role"] == "munge" for p in site
    )
    inventory = yaml.safe_load((ansible / "inventory.yml").read_text())
    assert inventory["all"]["children"]["slurmrestd"] == {"hosts": {"rest-ctl": None}}
    result = subprocess.run(
        ["ansible-lint", "--profile", "production", "--offline", "--nocolor", "--format", "pep8"],
        cwd=ansible,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


needs_auth_jwt = pytest.mark.skipif(
    not HAS_AUTH_JWT, reason="this Slurm has no auth_jwt.so: slurmctld cannot check a token"
)


@pytest.fixture(scope="module")
def token_restd(rendered: Path, work: Path) -> Iterator[tuple[SlurmLab, int]]:
    """slurmctld, one slurmd and slurmrestd as the rendered role starts them: the role's auth
    plugins and OpenAPI plugins, SLURM_JWT=daemon, as an unprivileged user on a TCP port
    (the tests that use it are marked needs_auth_jwt)."""
    if not shutil.which("slurmrestd") or not shutil.which("curl"):
        pytest.skip("needs slurmrestd and curl")
    port = free_port()
    with SlurmLab.running(
        rendered, work / "jwt", [NODE, "rest-ctl"], controller="rest-ctl", nodes=[NODE]
    ) as lab:
        defaults = role_defaults(rendered)
        auth = ",".join(defaults["slurmrestd_auth_plugins"])
        lab.start(
            "slurmrestd",
            None,
            "env",
            "SLURM_JWT=daemon",
            *as_service_user(),
            str(SBIN / "slurmrestd"),
            "-a",
            auth,
            "-s",
            openapi_plugins(rendered)["slurmctld"],
            f"127.0.0.1:{port}",
        )
        lab.wait_for(lambda: lab.port_open(port), "slurmrestd's port")
        yield lab, port


def jwt_key(lab: SlurmLab) -> bytes:
    """The key slurmctld checks tokens with: the file the rendered AuthAltParameters name."""
    conf = (lab.etc / "slurm.conf").read_text()
    (parameters,) = [line for line in conf.splitlines() if line.startswith("AuthAltParameters=")]
    path = next(p for p in parameters.split("=", 1)[1].split(",") if p.startswith("jwt_key="))
    return Path(path.removeprefix("jwt_key=")).read_bytes()


def signed_token(key: bytes, user: str, lifetime: int = 300) -> str:
    """An HS256 token as a site's portal mints it (Slurm's jwt.html: the user in "sun", with
    "exp" and "iat"), signed with ``key``."""

    def encode(part: bytes) -> str:
        return base64.urlsafe_b64encode(part).rstrip(b"=").decode()

    now = int(time.time())
    header = encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = encode(json.dumps({"exp": now + lifetime, "iat": now, "sun": user}).encode())
    signature = hmac.new(key, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{encode(signature)}"


def api(port: int, path: str) -> str:
    return f"http://127.0.0.1:{port}/slurm/{API_VERSIONS[installed_slurm_version()]}/{path}"


def with_token(user: str, token: str) -> list[str]:
    return ["-H", f"X-SLURM-USER-NAME: {user}", "-H", f"X-SLURM-USER-TOKEN: {token}"]


@needs_auth_jwt
def test_a_token_from_scontrol_lists_jobs_and_submits_one(
    token_restd: tuple[SlurmLab, int],
) -> None:
    lab, port = token_restd
    out = lab.run("scontrol", "token", f"username={SERVICE_USER}", "lifespan=300")
    token = out.strip().removeprefix("SLURM_JWT=")
    job = {
        "job": {
            "name": "through-rest",
            "partition": "batch",
            "script": "#!/bin/sh\nexit 0\n",
            "current_working_directory": "/tmp",
            "environment": ["PATH=/usr/bin:/bin"],
        }
    }
    status, body = curl(
        lab,
        *with_token(SERVICE_USER, token),
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps(job),
        api(port, "job/submit"),
    )
    assert status == 200, body
    job_id = json.loads(body)["job_id"]
    status, body = curl(lab, *with_token(SERVICE_USER, token), api(port, "jobs"))
    assert status == 200, body
    jobs = {j["job_id"]: j for j in json.loads(body)["jobs"]}
    assert jobs[job_id]["name"] == "through-rest", body
    assert jobs[job_id]["user_name"] == SERVICE_USER, body
    assert jobs[job_id]["partition"] == "batch", body
    # slurmctld ran it as that user on the rendered node
    lab.wait_for(
        lambda: "COMPLETED" in lab.run("scontrol", "show", "job", str(job_id), check=False),
        "the submitted job to complete",
    )


@needs_auth_jwt
def test_a_token_signed_with_the_rendered_key_lists_jobs(
    token_restd: tuple[SlurmLab, int],
) -> None:
    lab, port = token_restd
    status, body = curl(
        lab, *with_token(SERVICE_USER, signed_token(jwt_key(lab), SERVICE_USER)), api(port, "jobs")
    )
    assert status == 200, body
    assert "jobs" in json.loads(body), body


def assert_refused_by_slurmctld(status: int, body: str) -> None:
    """A token slurmrestd passes on and slurmctld refuses: slurmrestd (SLURM_JWT=daemon) holds no
    key, so slurmctld checks the signature and the expiry, answers
    SLURM_PROTOCOL_AUTHENTICATION_ERROR (1007), and slurmrestd sends that as 511 Network
    Authentication Required (http_status_errors in src/common/http.c at slurm-24-11-5-1), with
    no job in the answer."""
    assert status == 511, body
    answer = json.loads(body)
    assert [e["error_number"] for e in answer["errors"]] == [1007], body
    assert not answer.get("jobs"), body


@needs_auth_jwt
def test_a_request_without_a_token_is_refused(token_restd: tuple[SlurmLab, int]) -> None:
    lab, port = token_restd
    status, body = curl(lab, "-H", f"X-SLURM-USER-NAME: {SERVICE_USER}", api(port, "jobs"))
    # slurmrestd itself refuses a request that names a user and carries no token
    assert (status, body) == (401, "Authentication failure")


@needs_auth_jwt
def test_a_token_signed_with_another_key_is_refused(token_restd: tuple[SlurmLab, int]) -> None:
    lab, port = token_restd
    forged = signed_token(os.urandom(32), SERVICE_USER)
    assert_refused_by_slurmctld(*curl(lab, *with_token(SERVICE_USER, forged), api(port, "jobs")))


@needs_auth_jwt
def test_an_expired_token_is_refused(token_restd: tuple[SlurmLab, int]) -> None:
    lab, port = token_restd
    expired = signed_token(jwt_key(lab), SERVICE_USER, lifetime=-60)
    assert_refused_by_slurmctld(*curl(lab, *with_token(SERVICE_USER, expired), api(port, "jobs")))
