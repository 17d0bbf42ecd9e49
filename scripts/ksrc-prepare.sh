#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ksrc-prepare.sh [--checkpatch] KERNELRELEASE OUTDIR
#
# Unpack, from the Debian linux-source tarball that matches KERNELRELEASE,
# only what an out-of-tree elevator needs and no linux-headers package ships:
# the private block/ headers, and with --checkpatch also checkpatch.pl and
# its data files. The result is cached in OUTDIR and reused while the
# source package version is unchanged. The elevator hands struct
# elevator_type to the core by value, so the headers must come from exactly
# the source the kernel was built from: a version mismatch is an error, not
# a warning.
#
# The tarball is a single 1.3 GB xz stream and block/ sits in its first
# 150 MB, so the headers are taken in two short passes that stop reading
# after block/ (list the names, then extract exactly those with
# --occurrence) instead of decompressing the whole stream: DKMS builds on
# slow machines (and in the emulated test guests) spend seconds, not
# minutes, here.
set -euo pipefail

usage() {
	echo "usage: $0 [--checkpatch] KERNELRELEASE OUTDIR" >&2
	exit 2
}
checkpatch=0
if [ "${1:-}" = --checkpatch ]; then
	checkpatch=1
	shift
fi
[ $# -eq 2 ] || usage
krel=$1
out=$2

# 6.1.0-56-amd64 -> 6.1 ; 6.12.117+deb12-amd64 -> 6.12
series=$(echo "$krel" | sed -n 's/^\([0-9]\+\.[0-9]\+\)[.-].*/\1/p')
[ -n "$series" ] || { echo "kvbatch: cannot parse kernel release '$krel'" >&2; exit 1; }

src_pkg=linux-source-$series
tarball=/usr/src/$src_pkg.tar.xz
if [ ! -r "$tarball" ]; then
	echo "kvbatch: private block headers for $krel need $tarball: apt-get install $src_pkg (or pass KSRC=/path/to/kernel/tree)" >&2
	exit 1
fi

pkgver() {
	dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true
}
src_ver=$(pkgver "$src_pkg")
# Debian 13's kernels ship the image as linux-binary-<release> (the
# linux-image-<release> package only depends on it and on an initramfs
# tool), so a root with just the binary package is checked too.
img_ver=$(pkgver "linux-image-$krel")
[ -n "$img_ver" ] || img_ver=$(pkgver "linux-binary-$krel")
if [ -n "$img_ver" ] && [ -n "$src_ver" ] && [ "$img_ver" != "$src_ver" ]; then
	echo "kvbatch: $src_pkg is $src_ver but linux-image-$krel is $img_ver; the private headers must match the kernel exactly: install matching versions (apt-get install --allow-downgrades $src_pkg=$img_ver; scripts/install-deps.sh does it) or pass KSRC=" >&2
	exit 1
fi
stamp="$src_pkg $src_ver $(stat -c %Y "$tarball")"

top=$src_pkg

# extract DIR NAMEFILE: the members listed in NAMEFILE, each read once, so
# that tar stops as soon as it has them all.
extract() {
	tar -xJf "$tarball" -C "$1" --strip-components=1 --occurrence -T "$2"
}

if [ ! -f "$out/.kvb-stamp" ] || [ "$(cat "$out/.kvb-stamp")" != "$stamp" ]; then
	mkdir -p "$(dirname "$out")"
	tmp=$(mktemp -d "$out.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# The listing stops at the first member after block/; tar and xz
	# then die of SIGPIPE, which is expected here.
	{ xz -dc "$tarball" 2>/dev/null | tar -t 2>/dev/null | awk -v p="$top/block/" '
		index($0, p) == 1 {
			seen = 1
			if (substr($0, length(p) + 1) ~ /^[^\/]+\.h$/)
				print
			next
		}
		seen { exit }' > "$tmp/.names"; } || true
	[ -s "$tmp/.names" ] || { echo "kvbatch: no $top/block/*.h in $tarball" >&2; exit 1; }
	extract "$tmp" "$tmp/.names"
	rm -f "$tmp/.names"
	echo "$stamp" > "$tmp/.kvb-stamp"
	rm -rf "$out"
	mv "$tmp" "$out"
	trap - EXIT
	echo "  KSRC    $out ($src_pkg $src_ver: block/*.h)"
fi

if [ $checkpatch = 1 ] &&
   { [ ! -f "$out/.kvb-stamp-checkpatch" ] ||
     [ "$(cat "$out/.kvb-stamp-checkpatch")" != "$stamp" ]; }; then
	printf '%s\n' "$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch" > "$out/.names"
	extract "$out" "$out/.names"
	rm -f "$out/.names"
	echo "$stamp" > "$out/.kvb-stamp-checkpatch"
	echo "  KSRC    $out ($src_pkg $src_ver: checkpatch.pl)"
fi
