#!/usr/bin/env bash
# Removes the SHM segments of shmbench runs that are gone: names <prefix><pid>_<16 hex>_<n>
# whose <pid> no longer exists (run it in the runs' PID namespace), regular files of ours only;
# says what it removed (with --dry-run, would remove) and what it skipped.
#   clean_shm.sh [--prefix P] [--dry-run]     P: the runs' --shm_prefix (default /mooncake_bench_)
# SHMB_SHM_DIR overrides /dev/shm (for tests).
set -u
prefix=/mooncake_bench_
dry_run=0
usage() {
  echo "usage: clean_shm.sh [--prefix P] [--dry-run]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage ;;
    *) echo "clean_shm.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
case $prefix in
  /*/*|""|[!/]*) echo "clean_shm.sh: invalid --prefix '$prefix': one leading '/', no other '/'" >&2; exit 2 ;;
esac
dir=${SHMB_SHM_DIR:-/dev/shm}
base=${prefix#/}
kept=0
skipped=0
gone=()
verb=removed
[ "$dry_run" -eq 1 ] && verb="would remove"
# dotglob: a --shm_prefix=/.x_ run's names begin with a dot; nullglob: an
# empty folder yields no name at all.
shopt -s dotglob nullglob
for path in "$dir"/*; do
  name=${path##*/}
  # The prefix is compared as a string (quoted), never as a pattern.
  [ "${name:0:${#base}}" = "$base" ] || continue
  rest=${name:${#base}}
  # getpid() printed with %ld: no sign, no leading zero.
  [[ $rest =~ ^([1-9][0-9]*)_[0-9a-f]{8}([0-9a-f]{8})?_[0-9]+$ ]] || continue
  pid=${BASH_REMATCH[1]}
  if [ -e "/proc/$pid" ]; then
    kept=$((kept + 1))
    continue
  fi
  # shm_open makes regular files owned by the caller; anything else of that
  # name is not a segment we may remove.
  if [ -L "$path" ] || [ ! -f "$path" ]; then
    echo "skipped $path: not a regular file"
    skipped=$((skipped + 1))
    continue
  fi
  if [ ! -O "$path" ]; then
    echo "skipped $path: owned by uid $(stat -c %u -- "$path"), not by us"
    skipped=$((skipped + 1))
    continue
  fi
  gone+=("$path")
  echo "$verb $path (pid $pid is gone)"
done
status=0
if [ "$dry_run" -eq 0 ] && [ ${#gone[@]} -gt 0 ]; then
  # One rm per many names: no fork per segment, no "Argument list too long".
  printf '%s\0' "${gone[@]}" | xargs -0 rm -f -- || status=1
fi
echo "clean_shm.sh: $verb ${#gone[@]} segments under $dir/$base; kept $kept of live processes; skipped $skipped not regular files of ours"
exit $status
