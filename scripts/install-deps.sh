#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages listed in scripts/deps.txt that are missing,
# then make (once) the cached Debian 13 root that Debian's 7.3 kernel is
# built and tested in (scripts/trixie-root.sh). Idempotent and quiet when
# everything is present, so every entry point (make test, make demo,
# .ci/run) can call it first. KVB_NO_TRIXIE=1 skips the Debian 13 root
# (then only the 6.1 and 6.12 kernels are built and tested).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
list="$here/deps.txt"

mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')

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

# The Debian 13 root: quiet when it is fresh, about 2 minutes when not.
if [ "${KVB_NO_TRIXIE:-0}" != 1 ]; then
	"$here/trixie-root.sh" > /dev/null
fi
