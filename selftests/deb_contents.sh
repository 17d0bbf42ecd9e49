#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deb_contents.sh: what the kvbatch-dkms package gives an engine, taken
# from the built package alone (build/deb, make deb), no guest: it ships
# the tagging header pair and the Python module where the system looks
# for them and depends on Python; a C99 program builds against the
# unpacked /usr/include with nothing of the tree, and the unpacked module
# imports and builds the same tags as that program.
# Output is TAP (ktap_helpers.sh).
# Usage: selftests/deb_contents.sh [--help]
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/deb-contents.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"
ktap_no_args deb_contents.sh "$@"

deb=$(find "$top/build/deb" -maxdepth 1 -name 'kvbatch-dkms_*_all.deb' \
	2>/dev/null | sort -V | tail -1)
[ -n "$deb" ] || ktap_exit_skip "no package in build/deb (make deb)"

ktap_print_header
ktap_set_plan 4

root=$tmp/root
dpkg-deb -x "$deb" "$root" || ktap_print_msg "dpkg-deb -x $deb failed"

ships() {
	local f rc=0

	for f in usr/include/kvbatch/kvbatch.h usr/include/kvbatch/kv-ioprio.h \
		 usr/lib/python3/dist-packages/kvbatch.py; do
		[ -f "$root/$f" ] || { ktap_print_msg "missing /$f"; rc=1; }
	done
	return "$rc"
}
ktap_check "the header pair and kvbatch.py are in /usr/include and dist-packages" ships

depends() {
	local dep

	dep=$(dpkg-deb -f "$deb" Depends)
	ktap_print_msg "Depends: $dep"
	echo "$dep" | tr ',' '\n' | grep -qE '^ *python3(:any)?( |$)'
}
ktap_check "the package depends on python3" depends

# The tags of each tier for a few ids, from the header.
cat > "$tmp/tags.c" <<'C'
#include <stdio.h>
#include <kvbatch/kvbatch.h>

int main(void)
{
	static const unsigned int ids[] = { 8, 9, 512, 1023 };
	unsigned int i, t;

	for (t = KVBATCH_DEMAND; t <= KVBATCH_PREFETCH; t++)
		for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
			printf("%u %u %d\n", t, ids[i],
			       kvbatch_tag((enum kvbatch_tier)t, ids[i]));
	return 0;
}
C
ctags() {
	# -I comes before the system's directories: the package's
	# header, even where one is installed.
	cc -std=c99 -D_DEFAULT_SOURCE -pedantic -Wall -Wextra -Werror \
		-I"$root/usr/include" -o "$tmp/tags" "$tmp/tags.c" \
		2> "$tmp/cc.err" &&
		"$tmp/tags" > "$tmp/c.out" && [ -s "$tmp/c.out" ] && return 0
	ktap_diag < "$tmp/cc.err"
	return 1
}
ktap_check "a C99 program builds against the package's header" ctags

# -I: no user site, no PYTHONPATH; only the unpacked dist-packages added.
pytags() {
	python3 -I - "$root/usr/lib/python3/dist-packages" "$tmp/c.out" \
		> "$tmp/py.out" 2>&1 <<'PY' && return 0
import sys
sys.path.insert(0, sys.argv[1])
import kvbatch
if not kvbatch.__file__.startswith(sys.argv[1]):
    raise SystemExit(f"imported {kvbatch.__file__}")
tiers = ["demand", "group", "prefetch"]
n = 0
for line in open(sys.argv[2]):
    t, i, c = (int(w) for w in line.split())
    p = kvbatch.tag(tiers[t], i)
    if p != c:
        raise SystemExit(f"{tiers[t]} {i}: python {p} C {c}")
    n += 1
print(f"{n} tags agree")
PY
	ktap_diag < "$tmp/py.out"
	return 1
}
ktap_check "the package's kvbatch.py imports on its own and builds the header's tags" pytags
ktap_finished
