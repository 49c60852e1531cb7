#!/usr/bin/env bash
# Installs the Debian packages roadtest needs, and only those that are missing,
# so that a second run does no network work.
set -euo pipefail

packages=(
    build-essential bc flex bison libelf-dev kmod xz-utils   # building the kernel
    lz4                                                      # the x86_64 kernel's compression
    device-tree-compiler                                     # dtc, for the guest's devicetree
    linux-source-6.12                                        # the kernel the drivers come from
    linux-source-6.1                                         # make test's check of --tree on another kernel
    python3 python3-venv                                     # the venv (with /usr/bin/python3)
    trace-cmd                                                # i2c tracing in the guest, imported as traces
    sigrok-cli                                               # roadtest import sigrok: its I2C decoder
    gdb                                                      # roadtest run --roadtest-gdb
    git                                                      # roadtest bisect (and its tests)
)
# --machine x86_64 and --vm qemu: QEMU 10 from bookworm-backports, whose vhost-user-gpio
# offers GPIO interrupts (7.2's does not); 9p's virtfs-proxy-helper is not needed.
backports=(qemu-system-x86)
apt_etc=${ROADTEST_APT_ETC:-/etc/apt}   # another directory only for the unit tests
ours=roadtest-backports                  # .list or .sources, as the machine's bookworm entry

# The bookworm-backports source, derived from the machine's own bookworm entry: its
# mirror (a machine behind a local mirror has no other route), options and keys, with
# the suite changed. Prints the file to write, then its contents; nothing if some other
# source already has bookworm-backports; fails if no entry names bookworm.
backports_source() {
    local lists=() stanzas=() f
    [ -f "$apt_etc/sources.list" ] && lists+=("$apt_etc/sources.list")
    for f in "$apt_etc"/sources.list.d/*.list; do
        [ -f "$f" ] && [ "${f##*/}" != "$ours.list" ] && lists+=("$f")
    done
    for f in "$apt_etc"/sources.list.d/*.sources; do
        [ -f "$f" ] && [ "${f##*/}" != "$ours.sources" ] && stanzas+=("$f")
    done
    # One-line format: deb [options] URI SUITE COMPONENTS...
    local one_line=''
    if [ ${#lists[@]} -gt 0 ]; then
        if awk '$1 == "deb" && / bookworm-backports( |$)/ { found = 1 } END { exit !found }' \
            "${lists[@]}"; then
            return 0
        fi
        one_line=$(awk '
            $1 != "deb" { next }
            {
                i = 2
                if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
                if ($(i + 1) == "bookworm" && $i !~ /^cdrom:/) {
                    $(i + 1) = "bookworm-backports"; print; exit
                }
            }' "${lists[@]}")
    fi
    # deb822 format: stanzas of "Field: value" lines (Types, URIs, Suites, ...).
    local stanza=''
    if [ ${#stanzas[@]} -gt 0 ]; then
        stanza=$(awk '
            function flush(   t) {
                if (n && !done && types ~ /(^| )deb( |$)/ && enabled != "no") {
                    if (suites ~ /(^| )bookworm-backports( |$)/) { backports = 1 }
                    else if (suites ~ /(^| )bookworm( |$)/ && uris !~ /^cdrom:/) {
                        for (j = 1; j <= n; j++) print lines[j]
                        done = 1
                    }
                }
                n = 0; types = suites = enabled = uris = ""; field = ""
            }
            FNR == 1 { flush() }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^[^ \t]/ {
                field = tolower(substr($0, 1, index($0, ":") - 1))
                value = substr($0, index($0, ":") + 1); gsub(/^[ \t]+|[ \t]+$/, "", value)
                if (field == "types") types = value
                if (field == "suites") { suites = value; $0 = "Suites: bookworm-backports" }
                if (field == "types") $0 = "Types: deb"
                if (field == "enabled") enabled = tolower(value)
                if (field == "uris") uris = value
            }
            { lines[++n] = $0 }
            END { flush(); if (backports) print "BACKPORTS" }
        ' "${stanzas[@]}")
        case $stanza in *BACKPORTS) return 0 ;; esac
    fi
    if [ -n "$stanza" ]; then
        printf '%s\n%s\n' "$apt_etc/sources.list.d/$ours.sources" "$stanza"
    elif [ -n "$one_line" ]; then
        printf '%s\n%s\n' "$apt_etc/sources.list.d/$ours.list" "$one_line"
    else
        echo "setup: no apt source for Debian bookworm in $apt_etc/sources.list or" \
            "$apt_etc/sources.list.d/ to take bookworm-backports' mirror from: add a" \
            "bookworm-backports source yourself (for ${backports[*]})" >&2
        return 1
    fi
}

if [ "${1:-}" = --print-backports-source ]; then  # for the unit tests
    backports_source
    exit
fi

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
if [ ${#missing_bpo[@]} -gt 0 ]; then
    derived=$(backports_source)
    if [ -n "$derived" ]; then
        file=${derived%%$'\n'*}
        rm -f "$apt_etc/sources.list.d/$ours.list" "$apt_etc/sources.list.d/$ours.sources"
        printf '%s\n' "${derived#*$'\n'}" >"$file"
        echo "setup: bookworm-backports from the machine's own mirror, in $file"
    fi
fi
apt-get update -q >/dev/null
if [ ${#missing[@]} -gt 0 ]; then
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#missing_bpo[@]} -gt 0 ]; then
    apt-get install -y -q --no-install-recommends -t bookworm-backports "${missing_bpo[@]}" >/dev/null
fi
