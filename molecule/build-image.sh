#!/usr/bin/env bash
# Build a Debian base image (systemd as PID 1) for Molecule's containers and the fresh-machine
# tests, unless it is already in podman's store: Debian 12 by default, ESTATEGEN_DEBIAN=13 for
# Debian 13. No registry is reachable here, so the image comes from debootstrap and
# `podman import`. Also writes the podman settings these machines need.
set -euo pipefail
DEBIAN="${ESTATEGEN_DEBIAN:-12}"
case "$DEBIAN" in
    12) SUITE=bookworm ;;
    13) SUITE=trixie ;;
    *) echo "molecule/build-image.sh: Debian $DEBIAN is not supported (12 or 13)" >&2; exit 1 ;;
esac
IMAGE="${ESTATEGEN_IMAGE:-localhost/estategen-debian:$DEBIAN}"

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
    "$SUITE" "$root" >/dev/null
# Containers need no getty or udev; a machine-id is made at first boot.
rm -f "$root/etc/machine-id"
: > "$root/etc/machine-id"
tar -C "$root" -c . | podman import --change 'CMD ["/lib/systemd/systemd"]' - "$IMAGE" >/dev/null
echo "built $IMAGE"
