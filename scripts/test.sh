#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian 12 or 13 machine, check that the tools
# the real-engine tests drive are there and work, then run the checks and the tests.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "scripts/test.sh: $*" >&2
    exit 1
}

# The release decides the package names; read it instead of assuming one.
[[ -r /etc/os-release ]] || fail "no /etc/os-release: the tests run on Debian 12 or 13"
# shellcheck source=/dev/null
. /etc/os-release
[[ "${ID:-}" == debian ]] || fail "this is ${PRETTY_NAME:-an unknown system}, not Debian 12 or 13"
release="${VERSION_ID:-}"
if [[ -z "$release" ]]; then
    # testing and unstable have no VERSION_ID; their codename is in debian_version
    case "$(cat /etc/debian_version 2>/dev/null)" in
        trixie*) release=13 ;;
        *) fail "cannot tell the Debian release from /etc/debian_version" ;;
    esac
fi

# What each group of tests drives, by package:
#   real Slurm daemons: slurm-wlm (slurmctld, slurmd), slurmdbd, munge, mariadb-server,
#     util-linux (unshare);
#   Molecule: podman with runc, netavark and aardvark-dns (netavark needs iptables),
#     debootstrap for the base image;
#   the report's page in a headless browser: chromium;
#   the Kubernetes manifests: kubectl kustomize (kubernetes-client), unless the machine
#     already has a kubectl from another package (a cloud SDK's), which it would conflict with;
#   the rendered Prometheus configuration and rules: prometheus (promtool, and a real
#     Prometheus scraping) and prometheus-node-exporter;
#   MPI under Slurm: libpmix2 (the mpi/pmix plugin loads it), openmpi-bin and libopenmpi-dev
#     (mpicc), gcc (which mpicc runs); the REST API: slurmrestd, and curl to call it on its
#     unix socket; the roles' apt tasks in check mode: python3-apt (Ansible's apt module
#     respawns under the system python3 to import it).
case "$release" in
    # Debian 13's 64-bit time_t transition renamed the PMIx library's package
    12) pmix=libpmix2 ;;
    13) pmix=libpmix2t64 ;;
    *) fail "Debian $release is not supported: the tests run on Debian 12 or 13" ;;
esac
DEBIAN_PACKAGES=(slurm-wlm slurmdbd munge mariadb-server util-linux
    podman runc netavark aardvark-dns iptables debootstrap chromium prometheus
    prometheus-node-exporter "$pmix" openmpi-bin libopenmpi-dev gcc slurmrestd curl containerd
    python3-apt)
command -v kubectl >/dev/null 2>&1 || DEBIAN_PACKAGES+=(kubernetes-client)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    [[ $(id -u) == 0 ]] || fail "Debian packages missing and not root to install them: ${missing[*]}"
    echo "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

scripts/check-tools.sh

# estategen with the test and lint tools, in .venv/ (scripts/install.sh); the tests run from it,
# and find its commands (estategen, ansible-playbook, molecule) first on the PATH.
scripts/install.sh --test
export VIRTUAL_ENV="$PWD/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"

ruff check generator tests blueprints benchmarks stacks
ruff format --check generator tests blueprints benchmarks stacks
mypy -p estategen
# the package's layers and no import cycle ([tool.importlinter] in pyproject.toml)
lint-imports --no-cache
mkdocs build --strict --quiet
python -m pytest -q -rs "$@"

# The real-daemon tests again on the other proven Slurm release (Debian 12's 22.05, Debian 13's
# 24.11), in a container of that Debian (scripts/slurm-release.sh; its image is built once per
# machine). Only after a full run: a run of chosen tests stays on this machine's release.
SLURM_DAEMON_TESTS=(tests/test_slurm_engine.py tests/test_slurm_properties.py
    tests/test_slurm_site.py tests/test_slurm_reservations.py tests/test_slurm_mpi.py
    tests/test_slurm_health.py tests/test_slurm_elastic.py tests/test_slurm_rest_api.py
    tests/test_slurm_power_hybrid.py tests/test_slurm_scheduling.py
    tests/test_import_realworld.py tests/test_kubernetes_slinky.py tests/test_slurm_gres_import.py
    tests/test_slurm_mps.py tests/test_slurm_shard.py tests/test_slurm_gpu_types.py)
if (($# == 0)); then
    case "$release" in
        12) other=24.11 ;;
        13) other=22.05 ;;
    esac
    echo "the real-daemon tests on Slurm $other"
    scripts/slurm-release.sh "$other" -- python -m pytest -q -rs -m slow \
        -o cache_dir=".pytest_cache/slurm-$other" "${SLURM_DAEMON_TESTS[@]}"
fi
