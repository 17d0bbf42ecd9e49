#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvsim_browser.sh: load kvsim's HTML page in headless Chromium, step
# through ticks with the page's own "step" button (the #step=N fragment
# clicks it N times), and check the page's state against kvsim's text
# output: the die cells of the timeline at that tick, the completion
# time of every batch and the foreign work ahead of its tail at the end.
# A screenshot of the first built-in trace is kept as build/kvsim/kvsim.png.
#
# A host test: selftests/run-all.sh runs it after the unit tests (it is
# not one of the guest's TEST_PROGS). Output is TAP (ktap_helpers.sh); a
# missing Chromium (Debian package chromium, scripts/deps.txt) is a SKIP.
# Chromium runs with its networking features off and DNS mapped to
# nowhere; the page's Content-Security-Policy forbids loading anything.
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/kvsim
kvsim=$top/tools/kvsim/kvsim
mkdir -p "$out"

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	ktap_test_skip "kvsim page in headless Chromium" "chromium is not installed (apt-get install chromium)"
	ktap_finished
fi
if ! make -s --no-print-directory -C "$top" kvsim > "$out/build.log" 2>&1; then
	ktap_diag < "$out/build.log"
	ktap_test_fail "kvsim builds"
	ktap_finished
fi

profile=$(mktemp -d /tmp/kvsim-chromium.XXXXXX)
trap 'rm -rf "$profile"' EXIT

chromium() {
	timeout 120 nice -n 10 "$browser" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --disable-component-update \
		--disable-sync --disable-extensions --disable-default-apps \
		--no-first-run --no-default-browser-check --no-proxy-server \
		--proxy-server='direct://' --proxy-bypass-list='*' \
		--host-resolver-rules='MAP * ~NOTFOUND' \
		--user-data-dir="$profile" --hide-scrollbars \
		--virtual-time-budget=5000 "$@" 2>> "$out/chromium.log"
}

# The page's state after loading URL: its key=value lines.
page_state() {
	chromium --dump-dom "$1" |
		sed -n '/<pre id="kvsim-state">/,/<\/pre>/p' |
		sed -e 's/.*<pre id="kvsim-state">//' -e 's/<\/pre>.*//' |
		sed -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g' | grep '='
}

# "12.345" or "12" microseconds -> nanoseconds, without floating point.
us_to_ns() {
	case $1 in
	*.*) echo $((10#${1%.*} * 1000 + 10#${1#*.})) ;;
	*) echo $((10#$1 * 1000)) ;;
	esac
}

: > "$out/chromium.log"
first=1
for trace in tail prefetch writes; do
	html=$out/$trace.html
	txt=$out/$trace.txt
	if ! "$kvsim" --trace "$trace" --timeline --html "$html" > "$txt" 2> "$out/$trace.err"; then
		ktap_diag < "$out/$trace.err"
		ktap_test_fail "$trace: kvsim writes the page"
		continue
	fi
	# Self-contained: no URL to fetch, no external script, style or font.
	if grep -Eiq '(src|href)=|@import|url\(["'"'"']?[a-z]+:|https?://[^"]*\.(js|css|woff)' "$html"; then
		grep -Eion '(src|href)=[^ ]*|@import|url\([^)]*\)' "$html" | head -5 | ktap_diag
		ktap_test_fail "$trace: the page references nothing external"
	else
		ktap_test_pass "$trace: the page references nothing external"
	fi

	# Timeline rows: "tick time | d0 d1 .. q w | ..."; the schedulers in
	# the header line.
	scheds=$(awk '$1 == "tick" && $2 == "time" { for (i = 3; i <= NF; i++) if ($i != "|") print $i; exit }' "$txt")
	rows=$(awk '/^timeline:/ { on = 1 } on && $1 ~ /^[0-9]+$/ && $3 == "|" { n++ } END { print n + 0 }' "$txt")
	step=$((rows / 4 + 1))

	state=$(page_state "file://$html#step=$step")
	echo "$state" > "$out/$trace.state-step"
	if [ "$(echo "$state" | sed -n 's/^ok=//p')" != 1 ]; then
		echo "$state" | grep -E '^(ok|error)=' | ktap_diag
		ktap_test_fail "$trace: the page loads and runs without error"
		continue
	fi
	ktap_test_pass "$trace: the page loads and runs without error"
	ktap_check "$trace: $step clicks on step reach tick $step of $rows" \
		test "$(echo "$state" | sed -n 's/^tick=//p')" = "$step" -a \
		"$(echo "$state" | sed -n 's/^maxTick=//p')" = "$rows"

	# The die cells of the text timeline's row $step against the page's.
	bad=0
	row=$(awk -v s="$step" '/^timeline:/ { on = 1 } on && $1 == s && $3 == "|" { print; exit }' "$txt")
	k=0
	for s in $scheds; do
		k=$((k + 1))
		cells=$(echo "$row" | awk -F'|' -v k=$((k + 1)) '{ print $k }')
		set -- $cells
		d=0
		while [ $# -gt 2 ]; do
			page=$(echo "$state" | sed -n "s/^$s\.d$d=//p")
			if [ "$page" != "$1" ]; then
				echo "$s die $d at tick $step: text '$1', page '$page'" | ktap_diag
				bad=1
			fi
			d=$((d + 1))
			shift
		done
		[ "$(echo "$state" | sed -n "s/^$s\.queued=//p")" = "$1" ] || {
			echo "$s queued: text $1, page $(echo "$state" | sed -n "s/^$s\.queued=//p")" | ktap_diag
			bad=1
		}
	done
	ktap_check "$trace: per-die state at tick $step matches kvsim --timeline" test $bad -eq 0

	# At the end: every batch's completion and "ahead" as kvsim reported.
	state=$(page_state "file://$html#end")
	echo "$state" > "$out/$trace.state-end"
	bad=0 nb=0
	while read -r line; do
		name=${line%% *}
		k=0
		for s in $scheds; do
			k=$((k + 1))
			set -- $(echo "$line" | awk -F'|' -v k=$((k + 1)) '{ print $k }')
			want_done=$(us_to_ns "$1")
			want_ahead=$(us_to_ns "$2")
			got_done=$(echo "$state" | sed -n "s/^$s\.done\.$name=//p")
			got_ahead=$(echo "$state" | sed -n "s/^$s\.ahead\.$name=//p")
			if [ "$got_done" != "$want_done" ] || [ "$got_ahead" != "$want_ahead" ]; then
				echo "$s $name: text $want_done/$want_ahead ns, page $got_done/$got_ahead" | ktap_diag
				bad=1
			fi
		done
		nb=$((nb + 1))
	done < <(awk '/^batch  / { on = 1; next } on && NF == 0 { exit } on' "$txt")
	ktap_check "$trace: at the last tick the page shows kvsim's $nb batch completion times" \
		test $bad -eq 0 -a $nb -gt 0

	if [ $first = 1 ]; then
		first=0
		rm -f "$out/kvsim.png"
		chromium --window-size=1400,700 --screenshot="$out/kvsim.png" \
			"file://$html#step=35&batch=B" > /dev/null
		size=$(stat -c %s "$out/kvsim.png" 2>/dev/null || echo 0)
		ktap_check "$trace: screenshot kept as build/kvsim/kvsim.png ($size bytes)" \
			sh -c "[ $size -gt 20000 ] && head -c 8 '$out/kvsim.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
	fi
done

ktap_finished
