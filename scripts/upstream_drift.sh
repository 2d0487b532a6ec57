#!/usr/bin/env bash
# Which upstream files a model follows have changed since the commit the model
# was written against (docs/models.md names both), so that a maintainer knows
# when a model is stale (docs/upstream.md).
#
#   scripts/upstream_drift.sh PATH [COMMIT]
#     PATH    a Mooncake checkout or git directory (bare or not)
#     COMMIT  the revision to compare with (default: HEAD of PATH)
#
# One line per file on stdout:
#   changed  MODELS  FILE  N commits since BASE[, M commits of BASE's history
#            missing (COMMIT does not descend from BASE)], +ADDED -REMOVED (the diff)
#   gone     MODELS  FILE  not in COMMIT (removed or renamed)
#   same     MODELS  FILE  unchanged since BASE
# and a summary on stderr. Exit status: 0 when no file changed, 1 when some
# did, 2 on bad input (PATH not a git repository, COMMIT or a model's base
# commit not in it: a shallow clone lacks the base).
# SHMB_DRIFT_SINCE=REV compares every file with REV instead of its model's
# commit (a fork with its own history; the script's test).
set -u

usage() { echo "usage: upstream_drift.sh PATH [COMMIT]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
path=$1
rev=${2:-HEAD}

# The models' upstream files (docs/models.md, "Mooncake"), as
# "MODEL BASE FILE". PR #192's path (24893a21e) is left out: it was never
# merged, so nothing upstream can drift from it.
tent=mooncake-transfer-engine/tent
followed="
offset 3b5a594 mooncake-store/include/offset_allocator/offset_allocator.h
offset 3b5a594 mooncake-store/src/offset_allocator.cpp
offset 3b5a594 mooncake-store/include/allocator.h
offset 3b5a594 mooncake-store/src/allocator.cpp
offset 3b5a594 mooncake-store/src/master_metric_manager.cpp
relocate 3b5a59413 $tent/src/transport/shm/shm_transport.cpp
relocate 3b5a59413 $tent/include/tent/common/concurrent/rw_spinlock.h
relocate 3b5a59413 $tent/include/tent/runtime/segment.h
relocate 3b5a59413 $tent/src/runtime/segment_manager.cpp
request_path 3b5a59413 $tent/include/tent/runtime/transfer_engine_impl.h
request_path 3b5a59413 $tent/src/runtime/transfer_engine_impl.cpp
request_path 3b5a59413 $tent/include/tent/runtime/transport_selector.h
request_path 3b5a59413 $tent/src/runtime/transport_selector.cpp
request_path 3b5a59413 $tent/include/tent/runtime/transport.h
request_path 3b5a59413 $tent/include/tent/runtime/slab.h
request_path 3b5a59413 $tent/src/runtime/slab.cpp
request_path 3b5a59413 $tent/src/transport/shm/shm_transport.cpp
"

[ -e "$path" ] || { echo "upstream_drift.sh: $path does not exist" >&2; exit 2; }
gitdir=$(git -C "$path" rev-parse --absolute-git-dir 2>/dev/null) \
  || { echo "upstream_drift.sh: $path is not a git repository" >&2; exit 2; }
g() { git --git-dir="$gitdir" "$@"; }
head=$(g rev-parse --verify --quiet "$rev^{commit}") \
  || { echo "upstream_drift.sh: $rev is not a commit of $path" >&2; exit 2; }

# One line per file, its models joined: the same file may serve two models.
files=$(echo "$followed" | awk 'NF == 3 {
  key = $2 " " $3
  if (!(key in models)) { order[n++] = key; models[key] = $1 } else models[key] = models[key] "," $1
} END { for (i = 0; i < n; i++) print models[order[i]], order[i] }')

changed=0
total=0
while read -r models base file; do
  [ -n "$file" ] || continue
  base=${SHMB_DRIFT_SINCE:-$base}
  since=$(g rev-parse --verify --quiet "$base^{commit}") \
    || { echo "upstream_drift.sh: $base (the commit $models was written against) is not in $path; fetch it (a shallow clone lacks it)" >&2; exit 2; }
  short=$(g rev-parse --short=9 "$since")
  total=$((total + 1))
  if ! g cat-file -e "$head:$file" 2>/dev/null; then
    printf 'gone     %-22s %s  not in %s (removed or renamed)\n' "$models" "$file" "$(g rev-parse --short=9 "$head")"
    changed=$((changed + 1))
    continue
  fi
  if g diff --quiet "$since" "$head" -- "$file"; then
    printf 'same     %-22s %s  unchanged since %s\n' "$models" "$file" "$short"
    continue
  fi
  # Commits that touched it since the base; and, when COMMIT does not
  # descend from the base, those of the base's it lacks.
  ahead=$(g rev-list --count "$since..$head" -- "$file")
  behind=$(g rev-list --count "$head..$since" -- "$file")
  stat=$(g diff --numstat "$since" "$head" -- "$file" | awk '{ a += $1; r += $2 } END { printf "+%d -%d", a, r }')
  why="$ahead commits since $short"
  [ "$behind" -gt 0 ] && why="$why, $behind commits of $short's history missing"
  printf 'changed  %-22s %s  %s, %s\n' "$models" "$file" "$why" "$stat"
  changed=$((changed + 1))
done <<<"$files"

echo "upstream_drift.sh: $changed of $total files changed at $(g rev-parse --short=9 "$head")" >&2
[ "$changed" -eq 0 ]
