#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# engine_cli.sh: the engines' tagging API on the host, no guest: the
# Python module (tools/python/kvbatch.py) builds the same tags as the C
# header (tools/include/kvbatch/kvbatch.h over kv-ioprio.h, built here
# in C99), both refuse batch ids 1..7 and past 1023, the id allocators
# never hand those out, bad arguments raise before anything changes, and
# kvbatch.recall() gives the thread its I/O priority back on a normal
# exit, on an exception and when nested. As root, an unprivileged demand
# recall (setpriv) raises PermissionError and changes nothing.
# Output is TAP (ktap_helpers.sh).
# Usage: selftests/engine_cli.sh [--help]
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/engine-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The system's Python, which an unprivileged user can run (setpriv).
py=${PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=python3

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"
ktap_no_args engine_cli.sh "$@"

ktap_print_header
ktap_set_plan 6

# pyrun CODE: CODE with the tree's module importable as kvbatch; its
# output in $tmp/py.out, shown on failure.
pyrun() {
	PYTHONPATH=$top/tools/python $py -c "$1" > "$tmp/py.out" 2>&1 && return 0
	ktap_diag < "$tmp/py.out"
	return 1
}

# The C header's tags and allocator, as text the Python side prints too.
cat > "$tmp/tags.c" <<'C'
#include <stdio.h>
#include <kvbatch/kvbatch.h>

int main(void)
{
	static const unsigned int ids[] = { 0, 1, 7, 8, 9, 512, 1023, 1024 };
	unsigned int i, t, c = 4294967000u, low = 0;

	for (t = KVBATCH_DEMAND; t <= KVBATCH_PREFETCH; t++)
		for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
			printf("%u %u %d\n", t, ids[i],
			       kvbatch_tag((enum kvbatch_tier)t, ids[i]));
	/* Across the counter's wrap: never an id outside 8..1023. */
	for (i = 0; i < 4096; i++) {
		unsigned int id = kvbatch_next_id(&c);

		low += id < KVBATCH_ID_MIN || id > KVBATCH_ID_MAX;
	}
	printf("bad ids %u\n", low);
	return 0;
}
C
ctags() {
	cc -std=c99 -D_DEFAULT_SOURCE -pedantic -Wall -Wextra -Werror \
		-I"$top" -I"$top/tools/include" -o "$tmp/tags" "$tmp/tags.c" &&
		"$tmp/tags" > "$tmp/c.out" &&
		grep -qx 'bad ids 0' "$tmp/c.out"
}
ktap_check "kvbatch.h builds in C99; kvbatch_next_id() stays in 8..1023 across its wrap" ctags

# Python's tag() against the header's kvbatch_tag(): the same value where
# C builds one, ValueError where C says -EINVAL (22); id 0 is C's
# "no batch id", which Python's recall() never needs.
same_tags() {
	pyrun '
import kvbatch
tiers = ["demand", "group", "prefetch"]
for line in open("'"$tmp/c.out"'"):
    w = line.split()
    if w[0] == "bad":
        continue
    t, i, c = tiers[int(w[0])], int(w[1]), int(w[2])
    try:
        p = kvbatch.tag(t, i)
    except ValueError:
        p = -22
    if i != 0 and p != c:
        raise SystemExit(f"{t} {i}: python {p} C {c}")
    if i == 0 and p != -22:
        raise SystemExit(f"{t} 0: python takes it")
print("agree")
'
}
ktap_check "kvbatch.tag() builds the header's tags and refuses the same ids" same_tags

bad_args() {
	pyrun '
import kvbatch
p = kvbatch.thread_ioprio()
for args, exc in [(("demand", 7), ValueError), (("demand", 1024), ValueError),
                  (("demand", -1), ValueError), (("rt", 8), ValueError),
                  ((None, 8), ValueError), (("group", "8"), TypeError),
                  (("group", True), TypeError), (("group", 8.0), TypeError)]:
    try:
        kvbatch.tag(*args)
        raise SystemExit(f"tag{args} accepted")
    except exc:
        pass
for kw in [{"tier": "bogus"}, {"batch_id": 3}, {"batch_id": 2000},
           {"tier": "group", "batch_id": "9"}]:
    try:
        kvbatch.recall(**kw)
        raise SystemExit(f"recall({kw}) accepted")
    except (ValueError, TypeError):
        pass
for v in [-1, 65536, "1", None]:
    try:
        kvbatch.set_thread_ioprio(v)
        raise SystemExit(f"set_thread_ioprio({v!r}) accepted")
    except ValueError:
        pass
ids = {kvbatch.next_batch_id() for _ in range(3000)}
assert ids == set(range(8, 1024)), sorted(set(range(8, 1024)) ^ ids)[:5]
assert kvbatch.thread_ioprio() == p
print("refused")
'
}
ktap_check "bad tiers, ids and priorities raise and change nothing; next_batch_id() covers 8..1023 only" \
	bad_args

restores() {
	pyrun '
import kvbatch
p = kvbatch.thread_ioprio()
with kvbatch.recall(batch_id=9, tier="group") as r:
    assert kvbatch.thread_ioprio() == r.ioprio == 2 << 13 | 9 << 3
    with kvbatch.recall(batch_id=10, tier="prefetch"):
        assert kvbatch.thread_ioprio() == 3 << 13 | 10 << 3
    assert kvbatch.thread_ioprio() == r.ioprio
assert kvbatch.thread_ioprio() == p
try:
    with kvbatch.recall(tier="group"):
        raise KeyError("boom")
except KeyError:
    pass
assert kvbatch.thread_ioprio() == p, kvbatch.thread_ioprio()
r = kvbatch.recall(tier="group")
with r:
    try:
        with r:
            raise SystemExit("entered twice")
    except RuntimeError:
        pass
assert kvbatch.thread_ioprio() == p
print("restored", p)
'
}
ktap_check "recall() restores the thread's I/O priority: on exit, on an exception, nested" \
	restores

# The other threads keep theirs: only the calling thread is tagged.
per_thread() {
	pyrun '
import threading
import kvbatch
p = kvbatch.thread_ioprio()
seen, go, done = [], threading.Event(), threading.Event()
def other():
    go.wait()
    seen.append(kvbatch.thread_ioprio())
    done.set()
t = threading.Thread(target=other)
t.start()
with kvbatch.recall(tier="group"):
    go.set()
    done.wait()
t.join()
assert seen == [p], (seen, p)
print("per thread")
'
}
ktap_check "recall() tags the calling thread only" per_thread

if [ "$(id -u)" != 0 ] || ! command -v setpriv > /dev/null; then
	ktap_test_skip "unprivileged demand raises PermissionError" \
		"needs root and setpriv to drop to an unprivileged user"
else
	denied() {
		cp "$top/tools/python/kvbatch.py" "$tmp/"
		chmod -R a+rX "$tmp"
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
			--bounding-set=-all "$py" -c '
import sys
sys.path.insert(0, sys.argv[1])
import kvbatch
p = kvbatch.thread_ioprio()
try:
    with kvbatch.recall():
        raise SystemExit("demand entered without privilege")
except PermissionError as e:
    assert "CAP_SYS_NICE" in str(e) and "group" in str(e), str(e)
assert kvbatch.thread_ioprio() == p
with kvbatch.recall(tier="group") as r:
    assert kvbatch.thread_ioprio() == r.ioprio
print("denied")
' "$tmp" > "$tmp/py.out" 2>&1 || { ktap_diag < "$tmp/py.out"; return 1; }
	}
	ktap_check "unprivileged demand raises PermissionError, changes nothing; group works" denied
fi

ktap_finished
