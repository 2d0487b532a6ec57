#!/usr/bin/env bash
# Which upstream files a model follows changed since the commit it was written against: a line
# per file (same, changed, gone), exit 0 none, 1 some, 2 bad input (docs/upstream.md, "Is a
# model stale?"). SHMB_DRIFT_SINCE=REV compares with REV instead (a fork; the test).
set -u

usage() { echo "usage: upstream_drift.sh PATH [COMMIT]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
path=$1
rev=${2:-HEAD}

# The models' upstream files (docs/models.md) as "REPO MODEL BASE FILE"; Flow-IPC's bases are
# each repository's last main commit before its model was written (2026-11-21).
tent=mooncake-transfer-engine/tent
session=src/ipc/session/detail
lend=src/ipc/shm/arena_lend
standalone=src/ipc/session/standalone/shm/arena_lend
followed="
Mooncake offset 3b5a594 mooncake-store/include/offset_allocator/offset_allocator.h
Mooncake offset 3b5a594 mooncake-store/src/offset_allocator.cpp
Mooncake offset 3b5a594 mooncake-store/include/allocator.h
Mooncake offset 3b5a594 mooncake-store/src/allocator.cpp
Mooncake offset 3b5a594 mooncake-store/src/master_metric_manager.cpp
Mooncake relocate 3b5a59413 $tent/src/transport/shm/shm_transport.cpp
Mooncake relocate 3b5a59413 $tent/include/tent/common/concurrent/rw_spinlock.h
Mooncake relocate 3b5a59413 $tent/include/tent/runtime/segment.h
Mooncake relocate 3b5a59413 $tent/src/runtime/segment_manager.cpp
Mooncake request_path 3b5a59413 $tent/include/tent/runtime/transfer_engine_impl.h
Mooncake request_path 3b5a59413 $tent/src/runtime/transfer_engine_impl.cpp
Mooncake request_path 3b5a59413 $tent/include/tent/runtime/transport_selector.h
Mooncake request_path 3b5a59413 $tent/src/runtime/transport_selector.cpp
Mooncake request_path 3b5a59413 $tent/include/tent/runtime/transport.h
Mooncake request_path 3b5a59413 $tent/include/tent/runtime/slab.h
Mooncake request_path 3b5a59413 $tent/src/runtime/slab.cpp
Mooncake request_path 3b5a59413 $tent/src/transport/shm/shm_transport.cpp
ipc_shm flowipc_classic eef36d5d7 src/ipc/shm/classic/pool_arena.hpp
ipc_shm flowipc_classic eef36d5d7 src/ipc/shm/classic/pool_arena.cpp
ipc_shm flowipc_classic eef36d5d7 $session/shm/classic/session_impl.hpp
ipc_shm flowipc_classic eef36d5d7 $session/shm/classic/client_session_impl.hpp
ipc_shm flowipc_classic eef36d5d7 $session/shm/classic/server_session_impl.hpp
ipc_session flowipc_classic 12d593f2f $session/client_session_impl.hpp
ipc_session flowipc_classic 12d593f2f $session/session_shared_name.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/jemalloc/memory_manager.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/jemalloc/ipc_arena.hpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/jemalloc/shm_pool_collection.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/jemalloc/jemalloc_pages.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/shm_pool_repository.hpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/shm_pool_collection.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/owner_shm_pool_collection.hpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/owner_shm_pool_collection.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/borrower_shm_pool_collection.hpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $lend/borrower_shm_pool_collection.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $standalone/jemalloc/shm_session.hpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $standalone/jemalloc/shm_session.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $standalone/shm_session_data.hpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $standalone/shm_session_data.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $standalone/lender_collection.cpp
ipc_shm_arena_lend flowipc_jemalloc 9ac277858 $standalone/borrower_collection.cpp
ipc_core flowipc_classic,flowipc_jemalloc bb9828558 src/ipc/transport/native_socket_stream.hpp
"

[ -e "$path" ] || { echo "upstream_drift.sh: $path does not exist" >&2; exit 2; }
gitdir=$(git -C "$path" rev-parse --absolute-git-dir 2>/dev/null) \
  || { echo "upstream_drift.sh: $path is not a git repository" >&2; exit 2; }
g() { git --git-dir="$gitdir" "$@"; }
head=$(g rev-parse --verify --quiet "$rev^{commit}") \
  || { echo "upstream_drift.sh: $rev is not a commit of $path" >&2; exit 2; }

# Which repository PATH is: the one of whose followed files most are in COMMIT
# or in their base (so that a repository that dropped them all still counts).
repo=$(echo "$followed" | while read -r name _ base file; do
  [ -n "$file" ] || continue
  g cat-file -e "$head:$file" 2>/dev/null || g cat-file -e "${SHMB_DRIFT_SINCE:-$base}:$file" 2>/dev/null && echo "$name"
done | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
[ -n "$repo" ] || { echo "upstream_drift.sh: $path holds none of the upstream files the models follow (looked for $(echo "$followed" \
  | awk 'NF == 4 && !seen[$1]++ { printf "%s%s\x27s %s", n++ ? ", " : "", $1, $4 }'), and the rest of docs/models.md's)" >&2; exit 2; }

# One line per file, its models joined: the same file may serve two models.
files=$(echo "$followed" | awk -v repo="$repo" '$1 == repo && NF == 4 {
  key = $3 " " $4
  if (!(key in models)) { order[n++] = key; models[key] = $2 } else models[key] = models[key] "," $2
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
