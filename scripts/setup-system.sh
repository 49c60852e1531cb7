#!/usr/bin/env bash
# Installs the Debian packages roadtest needs, and only those that are missing,
# so that a second run does no network work.
set -euo pipefail

packages=(
    build-essential bc flex bison libelf-dev kmod xz-utils   # building the kernel
    device-tree-compiler                                     # dtc, for the guest's devicetree
    linux-source-6.12                                        # the kernel the drivers come from
    python3 python3-venv                                     # the venv (with /usr/bin/python3)
    trace-cmd                                                # i2c tracing in the guest, imported as traces
    gdb                                                      # roadtest run --roadtest-gdb
    git                                                      # roadtest bisect (and its tests)
)
# --machine x86_64 and --vm qemu: QEMU 10 from bookworm-backports, whose vhost-user-gpio
# offers GPIO interrupts (7.2's does not); 9p's virtfs-proxy-helper is not needed.
backports=(qemu-system-x86)
sources=/etc/apt/sources.list.d/roadtest-backports.list

installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}
# A backports package counts as present only in its backports version (10.x), not 7.2.
from_backports() {
    installed "$1" && dpkg-query -W -f='${Version}' "$1" | grep -q '~bpo12'
}

missing=()
for pkg in "${packages[@]}"; do
    installed "$pkg" || missing+=("$pkg")
done
missing_bpo=()
for pkg in "${backports[@]}"; do
    from_backports "$pkg" || missing_bpo+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_bpo[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]} ${missing_bpo[*]/%//bookworm-backports}; install them as root" >&2
    exit 1
fi
echo "setup: installing ${missing[*]} ${missing_bpo[*]/%//bookworm-backports}"
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing_bpo[@]} -gt 0 ] && [ ! -e "$sources" ]; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" >"$sources"
fi
apt-get update -q >/dev/null
if [ ${#missing[@]} -gt 0 ]; then
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#missing_bpo[@]} -gt 0 ]; then
    apt-get install -y -q --no-install-recommends -t bookworm-backports "${missing_bpo[@]}" >/dev/null
fi
