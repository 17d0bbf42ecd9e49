#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ksrc-prepare.sh KERNELRELEASE OUTDIR
#
# Unpack, from the Debian linux-source tarball that matches KERNELRELEASE,
# only what an out-of-tree elevator needs and no linux-headers package ships:
# the private block/ headers, plus checkpatch.pl and its data files. The
# result is cached in OUTDIR and reused while the source package version is
# unchanged. The elevator hands struct elevator_type to the core by value,
# so the headers must come from exactly the source the kernel was built
# from: a version mismatch is an error, not a warning.
set -euo pipefail

usage() {
	echo "usage: $0 KERNELRELEASE OUTDIR" >&2
	exit 2
}
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
img_ver=$(pkgver "linux-image-$krel")
if [ -n "$img_ver" ] && [ -n "$src_ver" ] && [ "$img_ver" != "$src_ver" ]; then
	echo "kvbatch: $src_pkg is $src_ver but linux-image-$krel is $img_ver; the private headers must match the kernel exactly: install matching versions (apt-get install $src_pkg=$img_ver linux-image-$krel=$img_ver) or pass KSRC=" >&2
	exit 1
fi
stamp="$src_pkg $src_ver $(stat -c %Y "$tarball")"

if [ -f "$out/.kvb-stamp" ] && [ "$(cat "$out/.kvb-stamp")" = "$stamp" ]; then
	exit 0
fi

mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
top=$src_pkg
tar -xJf "$tarball" -C "$tmp" --strip-components=1 --wildcards \
	"$top/block/*.h" \
	"$top/scripts/checkpatch.pl" \
	"$top/scripts/spelling.txt" \
	"$top/scripts/const_structs.checkpatch"
echo "$stamp" > "$tmp/.kvb-stamp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "  KSRC    $out ($src_pkg $src_ver)"
