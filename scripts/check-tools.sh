#!/usr/bin/env bash
# Check that every tool the real-engine tests drive is installed and works; exit 1 with one line
# naming the first one missing and its Debian package. scripts/test.sh runs it before the tests.
set -euo pipefail

fail() {
    echo "scripts/check-tools.sh: $*" >&2
    exit 1
}

# Every tool a test drives, checked here so a missing one fails now, in one line, instead of
# deep inside a test (or as a skip that hides it).
require() {
    local tool="$1" package="$2"
    [[ -x "$tool" ]] || command -v "$tool" >/dev/null 2>&1 \
        || fail "missing $tool (Debian package $package)"
}
require slurmctld slurm-wlm
require slurmd slurm-wlm
require sinfo slurm-client
require sacctmgr slurm-client
require slurmdbd slurmdbd
require munged munge
require mariadbd mariadb-server
require unshare util-linux
require podman podman
require runc runc
require /usr/lib/podman/netavark netavark
require /usr/lib/podman/aardvark-dns aardvark-dns
require iptables iptables
require debootstrap debootstrap
require chromium chromium
require kubectl kubernetes-client
require promtool prometheus
require prometheus prometheus
require prometheus-node-exporter prometheus-node-exporter
require mpicc libopenmpi-dev
require slurmrestd slurmrestd
require curl curl
require containerd containerd
# the library Slurm's mpi/pmix plugin loads at run time
[[ -e /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2 ]] \
    || fail "missing /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2 (Debian package libpmix2, on Debian 13 libpmix2t64)"

slurm_version="$(slurmctld -V 2>/dev/null)" || fail "slurmctld -V does not run"
kubectl kustomize --help >/dev/null 2>&1 || fail "kubectl has no kustomize command (Debian package kubernetes-client)"
podman_backend="$(podman info --format '{{.Host.NetworkBackend}}' 2>&1)" \
    || fail "podman does not work: $podman_backend"
echo "Debian $(cat /etc/debian_version), ${slurm_version}, podman $(podman --version | awk '{print $3}') with $podman_backend"

