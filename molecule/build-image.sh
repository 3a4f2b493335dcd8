#!/usr/bin/env bash
# Build the Debian 12 base image Molecule's containers run (systemd as PID 1), unless it is
# already in podman's store. No registry is reachable here, so the image comes from
# debootstrap and `podman import`. Also writes the podman settings these machines need.
set -euo pipefail
IMAGE="${ESTATEGEN_IMAGE:-localhost/estategen-debian:12}"

mkdir -p /etc/containers
if ! grep -qs 'network_backend = "netavark"' /etc/containers/containers.conf; then
    cat > /etc/containers/containers.conf <<'CONF'
[engine]
runtime = "runc"

[network]
network_backend = "netavark"

[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
CONF
fi

if podman image exists "$IMAGE"; then
    echo "image $IMAGE present"
    exit 0
fi

root="$(mktemp -d /var/tmp/estategen-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,systemd,systemd-sysv,sudo,dbus,procps,iproute2 \
    bookworm "$root" >/dev/null
# Containers need no getty or udev; a machine-id is made at first boot.
rm -f "$root/etc/machine-id"
: > "$root/etc/machine-id"
tar -C "$root" -c . | podman import --change 'CMD ["/lib/systemd/systemd"]' - "$IMAGE" >/dev/null
echo "built $IMAGE"
