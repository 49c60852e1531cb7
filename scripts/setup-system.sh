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
)

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}; install them as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
