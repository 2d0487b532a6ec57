#!/usr/bin/env bash
# Boost 1.81's headers for the Flow-IPC upstream subset (docs/upstream.md),
# unpacked into a private folder: Debian's libboost1.81-dev conflicts with
# the libboost1.74-dev the suite builds with, so it is downloaded
# (apt-get download) and extracted (dpkg-deb -x), never installed.
#   flowipc_boost.sh DIR    -> DIR/usr/include/boost/version.hpp (1.81)
# Does nothing when DIR already holds them. Exit 1 with the reason otherwise.
set -euo pipefail
dir=${1:?usage: flowipc_boost.sh DIR}
pkg=libboost1.81-dev
if grep -qs 'define BOOST_LIB_VERSION "1_81"' "$dir/usr/include/boost/version.hpp"; then
  exit 0
fi
for tool in apt-get dpkg-deb; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "flowipc_boost.sh: $tool not found: unpack Boost 1.81's headers by hand into $dir/usr/include" >&2
    exit 1
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download "$pkg" >"$tmp/log" 2>&1); then
  echo "flowipc_boost.sh: apt-get download $pkg failed (run apt-get update?): $(tail -2 "$tmp/log")" >&2
  exit 1
fi
mkdir -p "$dir"
dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"
rm -rf "$dir/usr"
mv "$tmp/root/usr" "$dir/usr"
echo "flowipc_boost.sh: Boost 1.81 headers in $dir/usr/include" >&2
