#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages listed in scripts/deps.txt that are missing,
# then make (once) the cached Debian 13 root that Debian's 7.3 kernel is
# built and tested in (scripts/trixie-root.sh). Idempotent and quiet when
# everything is present, so every entry point (make test, make demo,
# .ci/run) can call it first. KVB_NO_TRIXIE=1 skips the Debian 13 root
# (then only the 6.1 and 6.12 kernels are built and tested).
#
# --source-pins only prints, one per line, the linux-source packages that
# do not match their kernel image ("linux-source-6.1 6.1.192-3 6.1.192-2
# linux-image-6.1.0-56-amd64": package, installed, wanted, image), and
# changes nothing (selftests/deps_cli.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
list="$here/deps.txt"

usage() {
	echo "usage: $0 [--source-pins]" >&2
	exit 2
}
pins_only=0
case $# in
0) ;;
1) [ "$1" = --source-pins ] || usage; pins_only=1 ;;
*) usage ;;
esac

mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')

# The private block headers come from linux-source-SERIES and must be the
# exact source of the kernel image (scripts/ksrc-prepare.sh refuses any
# other). The archive may carry a newer source upload than the image its
# meta package depends on (a security suite can have a linux-source-6.1
# upload whose image is not there yet, and a fresh install then takes the
# newest of each, which do not match): print each installed source that
# differs from its image, as "package installed wanted image".
source_pins() {
	local meta dep img ver series src have

	for meta in "${pkgs[@]}"; do
		case $meta in linux-image-*amd64) ;; *) continue ;; esac
		# "linux-image-6.1.0-56-amd64 (= 6.1.192-2)"
		dep=$(dpkg-query -W -f='${Depends}' "$meta" 2>/dev/null |
			grep -o 'linux-image-[^ ,]* (= [^)]*)' | head -n 1) || true
		[ -n "$dep" ] || continue
		img=${dep%% *}
		ver=${dep##*= }
		ver=${ver%)}
		series=$(echo "$img" | sed -n 's/^linux-image-\([0-9]\+\.[0-9]\+\)[.-].*/\1/p')
		[ -n "$series" ] || continue
		src=linux-source-$series
		have=$(dpkg-query -W -f='${Version}' "$src" 2>/dev/null) || true
		if [ -n "$have" ] && [ "$have" != "$ver" ]; then
			echo "$src $have $ver $img"
		fi
	done
}

if [ $pins_only = 1 ]; then
	source_pins
	exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
	# A virtual or meta package is "installed" when dpkg says so.
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages: ${missing[*]}" >&2
		echo "install-deps: run as root or: sudo apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# Then install the source of the image's version, which the archive keeps.
while read -r src have ver img; do
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: $src is $have but $img is $ver: run as root or: sudo apt-get install --allow-downgrades $src=$ver" >&2
		exit 1
	fi
	echo "install-deps: $src $have does not match $img $ver: installing $src=$ver" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends --allow-downgrades "$src=$ver" \
		< /dev/null >&2
done < <(source_pins)

# The Debian 13 root: quiet when it is fresh, about 2 minutes when not.
if [ "${KVB_NO_TRIXIE:-0}" != 1 ]; then
	"$here/trixie-root.sh" > /dev/null
fi
