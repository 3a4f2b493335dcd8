#!/usr/bin/env bash
# Run a command where a given Slurm release is installed, with this checkout at the same path.
# Usage: scripts/slurm-release.sh RELEASE -- COMMAND...
#   22.05  Debian 12's slurm-wlm: the host itself, when its Slurm is that release
#   24.11  Debian 13's slurm-wlm (with slurmrestd and auth_jwt.so): a podman container of a
#          debootstrapped Debian 13 with those packages, built once as
#          localhost/estategen-slurm:24.11
# Other releases estategen renders (23.02, 23.11, 24.05, 25.05, 25.11, 26.05) have no Debian
# package: they are rendered from Slurm's documentation, and no real daemon checks them here.
# In the container, estategen and its test tools are in .venv-debian13/ (scripts/install.sh
# with the container's python3), first on the PATH; COMMAND runs as root, privileged, so the
# tests can make the namespaces their daemons run in.
# Example: scripts/slurm-release.sh 24.11 -- python -m pytest -m slow tests/test_slurm_engine.py
set -euo pipefail
cd "$(dirname "$0")/.."
checkout="$PWD"

fail() {
    echo "scripts/slurm-release.sh: $*" >&2
    exit 2
}

(($# >= 3)) && [[ "$2" == "--" ]] || fail "usage: scripts/slurm-release.sh RELEASE -- COMMAND..."
release="$1"
shift 2

host_release() {
    command -v slurmctld >/dev/null 2>&1 || return 0
    slurmctld -V | sed -nE 's/.* ([0-9]+)\.([0-9]+)\..*/\1.\2/p'
}

case "$release" in
    22.05) debian=12 ;;
    24.11) debian=13 ;;
    23.02 | 23.11 | 24.05 | 25.05 | 25.11 | 26.05)
        fail "Slurm $release has no Debian package: it is rendered from documentation only (proven releases: 22.05, 24.11)" ;;
    *) fail "unknown Slurm release '$release' (proven releases: 22.05, 24.11)" ;;
esac

if [[ "$(host_release)" == "$release" ]]; then
    exec "$@"
fi

image="localhost/estategen-slurm:$release"
if ! podman image exists "$image"; then
    ESTATEGEN_DEBIAN="$debian" bash molecule/build-image.sh >/dev/null
    echo "building $image (Debian $debian's Slurm packages)" >&2
    podman build --quiet --tag "$image" --file - . >/dev/null <<CONTAINERFILE
FROM localhost/estategen-debian:$debian
RUN apt-get update -qq \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        slurm-wlm slurmdbd slurmrestd slurm-wlm-jwt-plugin munge mariadb-server util-linux \\
        libpmix2t64 openmpi-bin libopenmpi-dev curl python3-venv git >/dev/null \\
    && apt-get clean
CONTAINERFILE
fi

venv=".venv-debian$debian"
# The host's trust store goes in beside the image's, for networks whose TLS is inspected.
exec podman run --rm --privileged --network host \
    -v "$checkout:$checkout" -w "$checkout" \
    -v /etc/ssl/certs/ca-certificates.crt:/etc/host-ca-certificates.crt:ro \
    -e PIP_CERT=/etc/host-ca-certificates.crt -e ESTATEGEN_VENV="$venv" \
    "$image" bash -c '
        ESTATEGEN_VENV="$ESTATEGEN_VENV" scripts/install.sh --test >/dev/null \
            || { echo "scripts/slurm-release.sh: installing into $ESTATEGEN_VENV failed" >&2; exit 2; }
        export VIRTUAL_ENV="$PWD/$ESTATEGEN_VENV" PATH="$PWD/$ESTATEGEN_VENV/bin:$PATH"
        exec "$@"' bash "$@"
