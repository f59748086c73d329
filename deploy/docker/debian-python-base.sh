#!/usr/bin/env bash
# Build a stand-in for the official python slim image from Debian packages, for
# machines that reach a Debian mirror but no container registry.
#
#   deploy/docker/debian-python-base.sh TAG [MIRROR]
#   docker build -f deploy/Dockerfile --build-arg PYTHON_IMAGE=TAG -t rewardsvc .
#
# The image is Debian bookworm (minbase) with its python3 (3.11), pip and CA
# certificates, laid out as the official image is where the Dockerfile relies on
# it: `python` and `pip` on PATH, and pip allowed to install as root into
# /usr/local (Debian marks its Python as externally managed; the official
# image does not). MIRROR defaults to the first Debian mirror apt uses here.
# Needs root (debootstrap), debootstrap, and DOCKER_HOST pointing at the engine.
set -euo pipefail

tag=${1:?usage: $0 TAG [MIRROR]}
suite=bookworm

apt_mirror() {
    # The first Debian URI in apt's sources (deb822 .sources files or one-line .list files).
    local file
    for file in /etc/apt/sources.list.d/*.sources; do
        [ -f "$file" ] || continue
        awk 'tolower($1) == "uris:" && $2 ~ /\/debian\/?$/ { print $2; exit }' "$file"
    done
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$file" ] || continue
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\/.*\/debian\/?$/) { print $i; exit } }' "$file"
    done
}

mirror=${2:-$(apt_mirror | head -n 1 || true)}
if [ -z "$mirror" ]; then
    echo "no Debian mirror found in apt's sources; pass one as the second argument" >&2
    exit 2
fi

root=$(mktemp -d)
cleanup() {
    # debootstrap mounts /proc and /sys inside the new root while it installs: if it was
    # interrupted, unmount them before removing the folder, and never cross into them.
    grep -o " $root/[^ ]*" /proc/mounts | sort -r | xargs -r -n 1 umount -l 2>/dev/null || true
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT

debootstrap --variant=minbase --include=python3,python3-pip,python-is-python3,ca-certificates \
    "$suite" "$root" "$mirror"

# What the official image does not carry: the externally-managed marker, apt's
# package lists and caches.
rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb

tar --numeric-owner -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$tag"
