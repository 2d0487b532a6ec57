#!/usr/bin/env bash
# Installs what shmbench needs to build, test, compare and plot, on Debian or
# Ubuntu, with apt-get (through sudo when not root). Does nothing when all is
# present.
set -euo pipefail

packages=(
  cmake make gcc g++ pkg-config
  libgflags-dev libgoogle-glog-dev   # the mains' flags and logging
  libcmocka-dev                      # unit tests
  libbsd-dev                         # <bsd/sys/tree.h> for the tree lookup strategy
  libboost-dev                       # boost.interprocess (header-only): the Flow-IPC SHM-classic model
  libjemalloc-dev                    # libjemalloc_pic.a: the Flow-IPC SHM-jemalloc model
  libbenchmark-tools python3-scipy   # Google Benchmark's compare.py and its U-test
  gnuplot-nox                        # plots
  valgrind                           # the cli_valgrind test (memcheck of each binary)
)
# Optional: only for a build against a Mooncake source (docs/upstream.md),
# whose TENT part includes <numa.h>.
if [ -n "${SHMB_MOONCAKE_SOURCE:-}" ]; then
  packages+=(libnuma-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_deps.sh: apt-get not found; install these by hand: ${missing[*]}" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install_deps.sh: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "install_deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
