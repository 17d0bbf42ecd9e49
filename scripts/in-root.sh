#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# in-root.sh ROOT DIR COMMAND...
#
# Run COMMAND chrooted into ROOT (the Debian 13 root of
# scripts/trixie-root.sh) with DIR (the kvbatch tree) visible at the same
# path, in DIR. The mounts it needs -- the tree, /proc (objtool reads
# /proc/self), /dev (/dev/null for kbuild) -- are made in a private mount
# namespace, so they vanish with COMMAND however it ends: nothing is left
# mounted in the cached root, and several builds may run at once.
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 ROOT DIR COMMAND..." >&2; exit 2; }
root=$1
dir=$2
shift 2

[ -x "$root/usr/bin/make" ] ||
	{ echo "kvbatch: $root is not a Debian 13 build root: run scripts/trixie-root.sh" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] ||
	{ echo "kvbatch: building in the Debian 13 root needs root (chroot)" >&2; exit 1; }
case $dir in
/*) ;;
*) echo "kvbatch: in-root.sh: DIR must be absolute: $dir" >&2; exit 2 ;;
esac

# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --propagation private -- /bin/bash -c '
	set -e
	root=$1 dir=$2
	shift 2
	mkdir -p "$root$dir"
	mount --bind "$dir" "$root$dir"
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	exec chroot "$root" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
		${MAKEFLAGS:+MAKEFLAGS="$MAKEFLAGS"} \
		/bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$dir" "$@"
' in-root "$root" "$dir" "$@"
