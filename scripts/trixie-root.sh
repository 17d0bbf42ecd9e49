#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# trixie-root.sh [--print] [--force]
#
# Make, once, the Debian 13 "trixie" root that kvbatch needs for Debian's
# 7.3 kernel (trixie-backports): an mmdebstrap --variant=apt root of
# trixie + trixie-backports with the packages of scripts/trixie-packages.txt,
# cached in KVB_TRIXIE_CACHE (default /var/cache/kvbatch) as trixie-root/.
#
# Why a root at all: the 7.3 kernel's kbuild binaries (linux-kbuild-7.3.4)
# and trixie's gcc-14 are linked against trixie's C library and do not run
# on Debian 12, and a module for a Debian 13 kernel must be built with the
# compiler Debian 13 users have. So the Makefile builds 7.3 modules inside
# this root (scripts/in-root.sh), and tools/kvvm boots the 7.3 kernel with
# this root as the guest's root file system, so that the guest runs
# trixie's fio, bpftrace, dkms and the kernel's own modules.
#
# The archive is the host's own Debian mirror (the URIs of
# /etc/apt/sources.list.d/debian.sources, or of /etc/apt/sources.list);
# KVB_TRIXIE_MIRROR overrides it. The root is rebuilt when the package
# list, the mirror or this script changes (a stamp beside it), and is
# replaced only once a new one is complete: an interrupted or failed run
# leaves the old root (or none) and says where its log is.
#
# Prints the root's path on stdout. --print only prints it (or fails if
# it is not there or stale); --force rebuilds it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${KVB_TRIXIE_CACHE:-/var/cache/kvbatch}
list=$here/trixie-packages.txt
root=$cache/trixie-root
stampf=$cache/trixie-root.stamp
log=$cache/trixie-root.log

usage() {
	echo "usage: $0 [--print] [--force]" >&2
	exit 2
}
print=0
force=0
while [ $# -gt 0 ]; do
	case $1 in
	--print) print=1 ;;
	--force) force=1 ;;
	*) usage ;;
	esac
	shift
done

die() {
	echo "kvbatch: $*" >&2
	exit 1
}

# The first Debian archive URI the host's apt uses (not the security one,
# which does not carry trixie-backports).
mirror() {
	local f u

	if [ -n "${KVB_TRIXIE_MIRROR:-}" ]; then
		echo "$KVB_TRIXIE_MIRROR"
		return
	fi
	for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		u=$(sed -n 's/^URIs:[[:space:]]*//p' "$f" | tr ' ' '\n' |
			grep -v -- '-security' | grep . | head -n1)
		[ -z "$u" ] || { echo "$u"; return; }
	done
	if [ -r /etc/apt/sources.list ]; then
		u=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\).*/\2/p' \
			/etc/apt/sources.list | grep -v -- '-security' | head -n1)
		[ -z "$u" ] || { echo "$u"; return; }
	fi
	echo http://deb.debian.org/debian
}

mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
[ ${#pkgs[@]} -gt 0 ] || die "no packages in $list"
uri=$(mirror)
stamp="$(printf '%s\n' "$uri" "${pkgs[@]}" | cat - "$0" | sha256sum | cut -d' ' -f1)"

fresh() {
	[ -f "$stampf" ] && [ "$(cat "$stampf")" = "$stamp" ] &&
		[ -x "$root/usr/bin/gcc-14" ] && ls "$root"/usr/lib/modules/*/vmlinuz >/dev/null 2>&1
}

if [ $force = 0 ] && fresh; then
	echo "$root"
	exit 0
fi
[ $print = 0 ] || die "the Debian 13 root is not made (or is stale): run scripts/trixie-root.sh (about 3 minutes; needs root and the Debian archive)"

[ "$(id -u)" -eq 0 ] || die "making the Debian 13 root needs root (mmdebstrap, chroot): run scripts/trixie-root.sh as root"
command -v mmdebstrap >/dev/null ||
	die "making the Debian 13 root needs mmdebstrap: apt-get install mmdebstrap"
[ -r /usr/share/keyrings/debian-archive-keyring.gpg ] ||
	die "no /usr/share/keyrings/debian-archive-keyring.gpg: apt-get install debian-archive-keyring"

mkdir -p "$cache"
# One maker at a time; a second caller waits and then finds it fresh.
exec 9> "$cache/trixie-root.lock"
flock 9
if [ $force = 0 ] && fresh; then
	echo "$root"
	exit 0
fi

tmp=$(mktemp -d "$cache/trixie-root.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
kr="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
echo "  ROOT    making the Debian 13 root $root from $uri (log: $log)" >&2
start=$(date +%s)
# Recommends are off so the root holds exactly the list (and their
# dependencies); the apt lists stay so that apt works inside the root.
if ! mmdebstrap --variant=apt --mode=root --format=directory \
	--aptopt='APT::Install-Recommends "false"' \
	--include="$(IFS=,; echo "${pkgs[*]}")" \
	--skip=cleanup/apt/lists \
	trixie "$tmp/root" \
	"deb $kr $uri trixie main" \
	"deb $kr $uri trixie-backports main" > "$log" 2>&1; then
	tail -n 15 "$log" | sed 's/^/kvbatch: mmdebstrap: /' >&2
	die "could not make the Debian 13 root (mmdebstrap failed; full log: $log). A package of $list missing from $uri trixie/trixie-backports shows above as 'Unable to locate package'."
fi
ls "$tmp"/root/usr/lib/modules/*/vmlinuz > /dev/null 2>&1 ||
	die "the Debian 13 root has no /usr/lib/modules/*/vmlinuz (log: $log)"
# Replace the old root only now; rename first so a guest that still has
# it open keeps a consistent tree until it exits. A 7.3 debug kernel built
# in the old root (scripts/debug-kernel.sh -s 7.3: its source and build
# tree, its installed modules) took most of an hour: carry it over.
if [ -e "$root" ]; then
	for d in "$root"/usr/src/kvbatch-debug-* "$root"/usr/lib/modules/*-kvbdebug; do
		[ -d "$d" ] || continue
		mv "$d" "$tmp/root${d#"$root"}"
	done
	mv "$root" "$tmp/old"
fi
mv "$tmp/root" "$root"
echo "$stamp" > "$stampf"
rm -rf "$tmp"
trap - EXIT
echo "  ROOT    $root made in $(($(date +%s) - start)) s" >&2
echo "$root"
