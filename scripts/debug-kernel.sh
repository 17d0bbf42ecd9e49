#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh [-s SERIES] [--kcsan] [--print]
#
# Build, once, a debug guest kernel from Debian's linux-source-SERIES
# (6.1, the default, 6.12 or 7.3): x86_64
# defconfig plus scripts/debug-kernel.config (KASAN, lockdep, atomic-sleep
# checks, kmemleak, fault injection, block debugfs; virtio, 9p, overlayfs
# and NVMe built in; null_blk as a module). It is cached outside the clone,
# in KVB_DEBUG_CACHE (default /var/cache/kvbatch), and installed like a
# distro kernel (/boot/vmlinuz-<release>, /lib/modules/<release>) so that
# tools/kvvm boots it and the Makefile builds kvbatch against it. Rebuilt
# only when the source package or a config fragment changes. Options that
# exist in one series only are in scripts/debug-kernel-SERIES.config.
#
# --kcsan builds the data-race flavour instead: the same fragments with
# scripts/debug-kernel-kcsan.config merged last (KCSAN in place of KASAN,
# which it cannot be combined with). It is a kernel of its own, release
# suffix -kvbkcsan, with its own build tree and stamp, beside the KASAN one.
#
# 7.3 is Debian 13's (trixie-backports): its linux-source-7.3 is in the
# Debian 13 root of scripts/trixie-root.sh (made if missing), and the
# kernel is built inside that root (scripts/in-root.sh) with trixie's
# gcc-14, like every 7.3 build. Source and build tree live in the root, in
# /usr/src/kvbatch-debug-7.3/{src,obj} (trixie-root.sh carries them over
# when it remakes the root), and it is installed there the Debian 13 way,
# /usr/lib/modules/<release>/{vmlinuz,config,System.map} and the modules,
# with build and source links relative to the root: so tools/kvvm boots it
# on that root (its null_blk found there) and the Makefile, finding its
# build tree only in the root, builds kvbatch against it there.
#
# Prints the kernel release on stdout; --print only prints it (or fails if
# the kernel is not built).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${KVB_DEBUG_CACHE:-/var/cache/kvbatch}

usage() {
	echo "usage: $0 [-s 6.1|6.12|7.3] [--kcsan] [--print]" >&2
	exit 2
}
series=6.1
print=0
flavour=
while [ $# -gt 0 ]; do
	case $1 in
	-s) [ $# -ge 2 ] || usage; series=$2; shift ;;
	--print) print=1 ;;
	--kcsan) flavour=kcsan ;;
	*) usage ;;
	esac
	shift
done
pkg=linux-source-$series
frags=("$top/scripts/debug-kernel.config" "$top/scripts/debug-kernel-$series.config")
[ -z "$flavour" ] || frags+=("$top/scripts/debug-kernel-$flavour.config")
# The kernel's name in the cache: the series, and the flavour if any.
name=$series${flavour:+-$flavour}
stampf=$cache/debug-$name.stamp
case $series in
6.1|6.12)
	# Built and installed on the host: root is /, paths are host paths.
	root=
	src=$cache/$pkg
	obj=$cache/obj-$name-debug
	run=()
	;;
7.3)
	if [ $print = 1 ]; then
		root=$("$top/scripts/trixie-root.sh" --print)
	else
		root=$("$top/scripts/trixie-root.sh")
	fi
	# Paths inside the root; make runs there.
	src=/usr/src/kvbatch-debug-$series/src
	obj=/usr/src/kvbatch-debug-$series/obj${flavour:+-$flavour}
	run=("$top/scripts/in-root.sh" "$root" "$top")
	;;
*) echo "kvbatch: no debug kernel for series '$series' (6.1, 6.12 or 7.3)" >&2; usage ;;
esac
tarball=$root/usr/src/$pkg.tar.xz

[ -r "$tarball" ] || { echo "kvbatch: the debug kernel is built from $tarball: apt-get install $pkg" >&2; exit 1; }
ver=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Version}' "$pkg")
stamp="$pkg $ver $(cat "${frags[@]}" | sha256sum | cut -d' ' -f1)"

# Where the kernel image goes: /boot/vmlinuz-<release> on the host, or
# <root>/usr/lib/modules/<release>/vmlinuz (Debian 13's place, where
# tools/kvvm and the Makefile look in the Debian 13 root).
image() {
	if [ -n "$root" ]; then
		echo "$root/usr/lib/modules/$1/vmlinuz"
	else
		echo "/boot/vmlinuz-$1"
	fi
}

installed() {
	local k

	[ -f "$stampf" ] && [ "$(sed -n 1p "$stampf")" = "$stamp" ] || return 1
	k=$(sed -n 2p "$stampf")
	[ -f "$(image "$k")" ] && [ -f "$root/lib/modules/$k/modules.dep" ] &&
		[ -f "$root/lib/modules/$k/build/Makefile" ] || return 1
	echo "$k"
}

# bpftrace finds the kernel's headers through /lib/modules/<release>/source
# and build; since 6.6 modules_install no longer makes the source link of an
# O= build, so make it (also for a cached kernel installed without it).
# In the Debian 13 root both are relative, like Debian's own, so that they
# resolve in the root from the host, in the chroot and in the guest.
source_link() {
	local m=$root/lib/modules/$1

	if [ -n "$root" ]; then
		ln -sfnr "$root$obj" "$root/usr/lib/modules/$1/build"
		ln -sfnr "$root$src" "$root/usr/lib/modules/$1/source"
	else
		[ -e "$m/source" ] || ln -sfn "$src" "$m/source"
	fi
}

if k=$(installed); then
	[ $print = 1 ] || source_link "$k"
	echo "$k"
	exit 0
fi
[ $print = 0 ] || { echo "kvbatch: the debug kernel is not built: make test-debug (or scripts/debug-kernel.sh -s $series${flavour:+ --$flavour})" >&2; exit 1; }

mkdir -p "$cache"
log=$cache/debug-$name-build.log
echo "  DEBUG   building the $pkg $ver debug kernel in ${root:+$root:}$obj (log: $log)" >&2
start=$(date +%s)
if [ ! -f "$root$src/.kvb-src" ] || [ "$(cat "$root$src/.kvb-src")" != "$pkg $ver" ]; then
	rm -rf "$root$src"
	mkdir -p "$root$src"
	tar -xJf "$tarball" -C "$root$src" --strip-components=1
	echo "$pkg $ver" > "$root$src/.kvb-src"
fi
(
	set -x
	"${run[@]}" make -C "$src" O="$obj" defconfig
	"${run[@]}" "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}"
	"${run[@]}" make -C "$src" O="$obj" olddefconfig
) > "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }

# The fragments are only a request: make sure Kconfig granted what the tests
# rely on (a dependency missing from defconfig would silently drop it). A
# later fragment overrides an earlier one, as in merge_config.sh: only the
# last setting of each option is checked.
missing=
while IFS= read -r line; do
	case $line in
	CONFIG_*=n) grep -qx "# ${line%=n} is not set" "$root$obj/.config" ||
			! grep -q "^${line%=n}=" "$root$obj/.config" || missing+=" $line" ;;
	CONFIG_*=*) grep -qxF "$line" "$root$obj/.config" || missing+=" $line" ;;
	esac
done < <(cat "${frags[@]}" | awk -F= '/^CONFIG_/ { last[$1] = $0; order[n++] = $1 }
	END { for (i = 0; i < n; i++) if (!(order[i] in done)) {
		done[order[i]] = 1; print last[order[i]] } }')
if [ -n "$missing" ]; then
	echo "kvbatch: Kconfig did not grant:$missing" >&2
	exit 1
fi

"${run[@]}" make -C "$src" O="$obj" -j"$(nproc)" bzImage modules >> "$log" 2>&1 ||
	{ tail -30 "$log" >&2; exit 1; }
k=$("${run[@]}" make -s -C "$src" O="$obj" kernelrelease)
"${run[@]}" make -C "$src" O="$obj" modules_install >> "$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
source_link "$k"
if [ -n "$root" ]; then
	install -m 0644 "$root$obj/arch/x86/boot/bzImage" "$(image "$k")"
	install -m 0644 "$root$obj/.config" "$root/usr/lib/modules/$k/config"
	install -m 0644 "$root$obj/System.map" "$root/usr/lib/modules/$k/System.map"
else
	install -m 0644 "$obj/arch/x86/boot/bzImage" "$(image "$k")"
	install -m 0644 "$obj/.config" "/boot/config-$k"
	install -m 0644 "$obj/System.map" "/boot/System.map-$k"
fi
printf '%s\n%s\n' "$stamp" "$k" > "$stampf"
echo "  DEBUG   $k built in $(( $(date +%s) - start )) s" >&2
echo "$k"
