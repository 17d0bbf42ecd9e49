#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps_cli.sh: the pairing of each kernel image with the linux-source
# package of its own version, on the host, against a stub dpkg-query that
# answers from a small package table made here (and stub apt-get and
# trixie-root steps that record instead of installing): nothing on the
# machine is read or changed. scripts/install-deps.sh --source-pins lists
# a source whose version differs from the image its meta package depends
# on (a security suite can carry a linux-source-6.1 upload newer than the
# image, and a fresh make test cannot build against such a pair), and
# nothing when they match; scripts/ksrc-prepare.sh refuses such a source
# with the command that fixes it and creates nothing. Bad arguments exit 2
# with the usage. selftests/run-all.sh runs it with the other host tests.
# Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
deps=$top/scripts/install-deps.sh
ksrc=$top/scripts/ksrc-prepare.sh
tmp=$(mktemp -d /tmp/deps-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
ktap_set_plan 6

# The package table: "PACKAGE version VERSION" and "PACKAGE depends DEPS".
db=$tmp/db
mkdir -p "$tmp/bin"
cat > "$tmp/bin/dpkg-query" <<'EOF'
#!/bin/bash
# dpkg-query -W -f=FORMAT PACKAGE, from the table in $KVB_TEST_DB.
fmt= pkg=
for a; do
	case $a in
	-W) ;;
	-f=*) fmt=${a#-f=} ;;
	*) pkg=$a ;;
	esac
done
case $fmt in
*Depends*) v=$(sed -n "s/^$pkg depends //p" "$KVB_TEST_DB") ;;
*Version*) v=$(sed -n "s/^$pkg version //p" "$KVB_TEST_DB") ;;
*Status*) grep -q "^$pkg " "$KVB_TEST_DB" && v="install ok installed" ;;
*) exit 2 ;;
esac
[ -n "${v:-}" ] || exit 1
printf '%s\n' "$v"
EOF
cat > "$tmp/bin/apt-get" <<'EOF'
#!/bin/bash
echo "apt-get $*" >> "$KVB_TEST_LOG"
EOF
chmod +x "$tmp/bin/dpkg-query" "$tmp/bin/apt-get"
export KVB_TEST_DB=$db KVB_TEST_LOG=$tmp/apt.log KVB_NO_TRIXIE=1
stub_path=$tmp/bin:$PATH

# table SRC61: the two kernels of scripts/deps.txt with their sources,
# linux-source-6.1 at version SRC61; every other listed package present.
table() {
	sed -e 's/#.*//' -e 's/[[:space:]]//g' "$top/scripts/deps.txt" |
		grep -v -e '^$' -e '^linux-source-' | sed 's/$/ version 1/' > "$db"
	cat >> "$db" <<EOF
linux-image-amd64 depends linux-image-6.1.0-56-amd64 (= 6.1.192-2)
linux-image-6.12-amd64 depends linux-image-6.12.117+deb12-amd64 (= 6.12.117-1~deb12u1)
linux-image-6.1.0-56-amd64 version 6.1.192-2
linux-source-6.1 version $1
linux-source-6.12 version 6.12.117-1~deb12u1
EOF
}

# diag WHAT TEXT: TEXT as diagnostic lines.
diag() {
	local l

	while IFS= read -r l; do
		echo "# $1: $l"
	done <<< "$2"
}

out=$(PATH=$stub_path "$deps" --bogus 2>&1)
rc=$?
ktap_check "install-deps: a bad argument exits 2 with the usage" \
	test "$rc" = 2 -a -n "$(echo "$out" | grep '^usage: ')"

table 6.1.192-3
out=$(PATH=$stub_path "$deps" --source-pins 2>&1)
rc=$?
want="linux-source-6.1 6.1.192-3 6.1.192-2 linux-image-6.1.0-56-amd64"
diag "source pins" "$out"
ktap_check "install-deps --source-pins names the source newer than its image, and only it" \
	test "$rc" = 0 -a "$out" = "$want"

: > "$KVB_TEST_LOG"
PATH=$stub_path "$deps" > /dev/null 2>&1
rc=$?
ktap_check "install-deps installs that source at the image's version, and nothing else" \
	test "$rc" = 0 -a "$(grep -c . "$KVB_TEST_LOG")" = 1 \
	-a -n "$(grep -- '--allow-downgrades linux-source-6.1=6.1.192-2' "$KVB_TEST_LOG")"

table 6.1.192-2
out=$(PATH=$stub_path "$deps" --source-pins 2>&1)
rc=$?
ktap_check "install-deps --source-pins prints nothing when every source matches" \
	test "$rc" = 0 -a -z "$out"

out=$("$ksrc" 2>&1)
rc=$?
ktap_check "ksrc-prepare: no arguments exits 2 with the usage" \
	test "$rc" = 2 -a -n "$(echo "$out" | grep '^usage: ')"

# ksrc-prepare looks for the tarball before it compares versions.
if [ ! -r /usr/src/linux-source-6.1.tar.xz ]; then
	ktap_test_skip "ksrc-prepare refuses a source of another version (no /usr/src/linux-source-6.1.tar.xz: apt-get install linux-source-6.1)"
else
	table 6.1.192-3
	out=$(PATH=$stub_path "$ksrc" 6.1.0-56-amd64 "$tmp/ksrc" 2>&1)
	rc=$?
	diag ksrc-prepare "$out"
	ktap_check "ksrc-prepare refuses a source of another version, names the fix and creates nothing" \
		test "$rc" = 1 -a ! -e "$tmp/ksrc" \
		-a -n "$(echo "$out" | grep -F -- 'apt-get install --allow-downgrades linux-source-6.1=6.1.192-2')"
fi

ktap_finished
