#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh [-s SERIES] [--print]
#
# Build, once, a debug guest kernel from Debian's linux-source-SERIES
# (6.1, the default, or 6.12): x86_64
# defconfig plus scripts/debug-kernel.config (KASAN, lockdep, atomic-sleep
# checks, kmemleak, fault injection, block debugfs; virtio, 9p, overlayfs
# and NVMe built in; null_blk as a module). It is cached outside the clone,
# in KVB_DEBUG_CACHE (default /var/cache/kvbatch), and installed like a
# distro kernel (/boot/vmlinuz-<release>, /lib/modules/<release>) so that
# tools/kvvm boots it and the Makefile builds kvbatch against it. Rebuilt
# only when the source package or a config fragment changes. Options that
# exist in one series only are in scripts/debug-kernel-SERIES.config.
#
# Prints the kernel release on stdout; --print only prints it (or fails if
# the kernel is not built).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${KVB_DEBUG_CACHE:-/var/cache/kvbatch}

usage() {
	echo "usage: $0 [-s 6.1|6.12] [--print]" >&2
	exit 2
}
series=6.1
print=0
while [ $# -gt 0 ]; do
	case $1 in
	-s) [ $# -ge 2 ] || usage; series=$2; shift ;;
	--print) print=1 ;;
	*) usage ;;
	esac
	shift
done
case $series in
6.1|6.12) ;;
*) echo "kvbatch: no debug kernel for series '$series' (6.1 or 6.12)" >&2; usage ;;
esac
pkg=linux-source-$series
tarball=/usr/src/$pkg.tar.xz
frags=("$top/scripts/debug-kernel.config" "$top/scripts/debug-kernel-$series.config")
src=$cache/$pkg
obj=$cache/obj-$series-debug
stampf=$cache/debug-$series.stamp

[ -r "$tarball" ] || { echo "kvbatch: the debug kernel is built from $tarball: apt-get install $pkg" >&2; exit 1; }
ver=$(dpkg-query -W -f='${Version}' "$pkg")
stamp="$pkg $ver $(cat "${frags[@]}" | sha256sum | cut -d' ' -f1)"

installed() {
	local k

	[ -f "$stampf" ] && [ "$(sed -n 1p "$stampf")" = "$stamp" ] || return 1
	k=$(sed -n 2p "$stampf")
	[ -f "/boot/vmlinuz-$k" ] && [ -f "/lib/modules/$k/modules.dep" ] &&
		[ -f "/lib/modules/$k/build/Makefile" ] || return 1
	echo "$k"
}

# bpftrace finds the kernel's headers through /lib/modules/<release>/source
# and build; since 6.6 modules_install no longer makes the source link of an
# O= build, so make it (also for kernels installed before this was added).
source_link() {
	[ -e "/lib/modules/$1/source" ] || ln -sfn "$src" "/lib/modules/$1/source"
}

if k=$(installed); then
	[ $print = 1 ] || source_link "$k"
	echo "$k"
	exit 0
fi
[ $print = 0 ] || { echo "kvbatch: the debug kernel is not built: make test-debug (or scripts/debug-kernel.sh -s $series)" >&2; exit 1; }

mkdir -p "$cache"
log=$cache/debug-$series-build.log
echo "  DEBUG   building the $pkg $ver debug kernel in $obj (log: $log)" >&2
start=$(date +%s)
if [ ! -f "$src/.kvb-src" ] || [ "$(cat "$src/.kvb-src")" != "$pkg $ver" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	tar -xJf "$tarball" -C "$src" --strip-components=1
	echo "$pkg $ver" > "$src/.kvb-src"
fi
(
	set -x
	make -C "$src" O="$obj" defconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}"
	make -C "$src" O="$obj" olddefconfig
) > "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }

# The fragments are only a request: make sure Kconfig granted what the tests
# rely on (a dependency missing from defconfig would silently drop it).
missing=
while IFS= read -r line; do
	case $line in
	CONFIG_*=n) grep -qx "# ${line%=n} is not set" "$obj/.config" ||
			! grep -q "^${line%=n}=" "$obj/.config" || missing+=" $line" ;;
	CONFIG_*=*) grep -qxF "$line" "$obj/.config" || missing+=" $line" ;;
	esac
done < <(cat "${frags[@]}")
if [ -n "$missing" ]; then
	echo "kvbatch: Kconfig did not grant:$missing" >&2
	exit 1
fi

make -C "$src" O="$obj" -j"$(nproc)" bzImage modules >> "$log" 2>&1 ||
	{ tail -30 "$log" >&2; exit 1; }
k=$(make -s -C "$src" O="$obj" kernelrelease)
make -C "$src" O="$obj" modules_install >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
source_link "$k"
install -m 0644 "$obj/arch/x86/boot/bzImage" "/boot/vmlinuz-$k"
install -m 0644 "$obj/.config" "/boot/config-$k"
install -m 0644 "$obj/System.map" "/boot/System.map-$k"
printf '%s\n%s\n' "$stamp" "$k" > "$stampf"
echo "  DEBUG   $k built in $(( $(date +%s) - start )) s" >&2
echo "$k"
