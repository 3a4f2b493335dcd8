#!/usr/bin/env bash
# Run a command where a given Slurm release is installed, with this checkout at the same path.
# Usage: scripts/slurm-release.sh RELEASE -- COMMAND...
#   22.05  Debian 12's slurm-wlm
#   24.11  Debian 13's slurm-wlm (with slurmrestd and auth_jwt.so)
# On a host whose Slurm is that release, COMMAND runs on the host. Otherwise it runs in a podman
# container of a debootstrapped Debian of that release with those packages, built once per
# machine as localhost/estategen-slurm:RELEASE (again only when its package list changes).
# Other releases estategen renders (23.02, 23.11, 24.05, 25.05, 25.11, 26.05) have no Debian
# package: they are rendered from Slurm's documentation, and no real daemon checks them here.
# In the container, estategen and its test tools are in .venv-debian12/ or .venv-debian13/
# (scripts/install.sh with the container's python3), first on the PATH; COMMAND runs as root, privileged, so the
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

# Debian 13 renamed the PMIx library's package (64-bit time_t) and added auth_jwt.so's
case "$release" in
    22.05) debian=12 packages="libpmix2" ;;
    24.11) debian=13 packages="libpmix2t64 slurm-wlm-jwt-plugin" ;;
    23.02 | 23.11 | 24.05 | 25.05 | 25.11 | 26.05)
        fail "Slurm $release has no Debian package: it is rendered from documentation only (proven releases: 22.05, 24.11)" ;;
    *) fail "unknown Slurm release '$release' (proven releases: 22.05, 24.11)" ;;
esac

if [[ "$(host_release)" == "$release" ]]; then
    exec "$@"
fi

image="localhost/estategen-slurm:$release"
# mpicc (openmpi-bin) runs gcc, which libopenmpi-dev does not pull in
containerfile="FROM localhost/estategen-debian:$debian
RUN apt-get update -qq \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        slurm-wlm slurmdbd slurmrestd munge mariadb-server util-linux $packages \\
        openmpi-bin libopenmpi-dev gcc curl python3-venv git >/dev/null \\
    && apt-get clean"
# Built once per machine: again only when the lines above change (the image carries their hash).
recipe="$(printf '%s' "$containerfile" | sha256sum | cut -c1-16)"
built="$(podman image inspect --format '{{ index .Labels "estategen.recipe" }}' "$image" 2>/dev/null || true)"
if [[ "$built" != "$recipe" ]]; then
    ESTATEGEN_DEBIAN="$debian" bash molecule/build-image.sh >/dev/null
    echo "building $image (Debian $debian's Slurm packages)" >&2
    previous="$(podman image inspect --format '{{ .Id }}' "$image" 2>/dev/null || true)"
    context="$(mktemp -d)"
    trap 'rm -rf "$context"' EXIT
    printf '%s\nLABEL estategen.recipe=%s\n' "$containerfile" "$recipe" >"$context/Containerfile"
    podman build --quiet --tag "$image" "$context" >/dev/null
    rm -rf "$context"
    trap - EXIT
    # the image of the earlier package list, unless a container still runs on it
    [[ -z "$previous" ]] || podman rmi "$previous" >/dev/null 2>&1 || true
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
