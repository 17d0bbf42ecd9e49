# SPDX-License-Identifier: GPL-2.0
#
# kmemleak-ours.awk: the objects of a kmemleak report (debugfs kmemleak)
# that were allocated on kvbatch's behalf, printed whole. An object is an
# "unreferenced object" line, its comm line and hex dump, a "backtrace"
# line and then one indented line per frame: "    [<%p>] %pS" up to 6.1
# (%p hashed, so only the symbol counts), "    %pS" since 6.12. Only the
# frames decide, never the comm (every test runs as a kvb_* task) or the
# hex dump.
#
# With -v lo=ADDR -v hi=ADDR (16 lower-case hex digits each, no 0x), an
# object is ours when a frame is a bare address in [lo, hi): the range a
# module occupied before it was unloaded, whose functions %pS can no
# longer name. Without, when a frame names kvbatch (kvb_*, kvp_*,
# [kvbatch]) or the block core's elevator switch path that allocates for
# it (elevator*, elv_*, blk_mq*).

function frame_is_ours(f,	a)
{
	if (lo == "")
		return f ~ /kv[bp]_|\[kvbatch\]|elevator|elv_|blk_mq/
	# %pS of an address it cannot name: 0x and the hex digits.
	if (f !~ /^0x[0-9a-f]+$/)
		return 0
	a = substr(f, 3)
	while (length(a) < 16)
		a = "0" a
	# Equal-length hex strings order as their numbers do.
	return a >= lo && a < hi
}

function flush()
{
	if (hit)
		printf "%s", obj
	obj = ""
	hit = 0
	frames = 0
}

/^unreferenced object/ { flush() }
{ obj = obj $0 "\n" }
/^  backtrace/ { frames = 1; next }
frames && /^    / && frame_is_ours($NF) { hit = 1 }
END { flush() }
