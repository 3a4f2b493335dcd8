#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine, then run them.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the real-engine tests use (installed only when missing; needs root).
DEBIAN_PACKAGES=(slurm-wlm slurmdbd munge mariadb-server util-linux podman runc debootstrap netavark aardvark-dns chromium)
missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test,dev]'

ruff check generator tests blueprints benchmarks stacks
ruff format --check generator tests blueprints benchmarks stacks
mypy -p estategen
python3 -m pytest -q "$@"
