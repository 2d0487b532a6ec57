#!/usr/bin/env bash
# scripts/upstream_drift.sh on small git repositories made here, one per kind
# of repository it knows (the table below): a repository holding none of its
# files exits 2 with one line naming, per kind, a file it looked for. Per kind:
# that file alone committed tells the kind, the kind's other files read "gone";
# every followed file is named in docs/models.md; the files as first committed
# (the base, given by SHMB_DRIFT_SINCE) read "same", exit 0; one file edited in
# a later commit reads "changed" with its commit count and diff, the others
# "same", exit 1; COMMIT given (the base) reads all "same" again; the
# repository lacks the model's own base: exit 2; a removed file reads "gone"
# in a bare clone, exit 1 (ipc_core's only file too: its base still tells the
# kind). Bad input (no such path, not a repository, no such commit, too many
# arguments) exits 2 with one line.
#   scripts_drift.sh SOURCE_DIR
src=$(cd "$1" && pwd)
source "$src/tests/cli/cli_lib.sh"
drift=$src/scripts/upstream_drift.sh
# KIND  MIN_FILES  EDITED  REMOVED (file names; the kind's followed files)
kinds="
Mooncake 10 offset_allocator.cpp slab.cpp
ipc_shm 5 pool_arena.cpp server_session_impl.hpp
ipc_shm_arena_lend 16 memory_manager.cpp lender_collection.cpp
ipc_session 2 session_shared_name.cpp client_session_impl.hpp
ipc_core 1 native_socket_stream.hpp native_socket_stream.hpp
"
g() { git -C "$repo" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@" >/dev/null 2>&1; }
# bad_input WHAT ARGS...: exit 2, one line on stderr, nothing on stdout.
bad_input() {
  local what=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ ! -s "$work/out" ] && ok \
    || fail "$what: exit $rc, stderr $(cat "$work/err"), stdout $(head -2 "$work/out")"
}

repo=$work/empty
mkdir -p "$repo" && g init -q && echo x >"$repo/README.md" && g add README.md && g commit -qm empty \
  || { fail "cannot make a git repository"; finish; exit $?; }
SHMB_DRIFT_SINCE=HEAD bad_input "none of the kinds" "$drift" "$repo"
looked=$(cat "$work/err")

while read -r kind min edited removed; do
  [ -n "$kind" ] || continue
  # The file the script named for this kind, alone, tells the kind.
  marker=$(echo "$looked" | grep -o " $kind's [^ ,]*" | awk '{ print $2 }')
  [ -n "$marker" ] || { fail "$kind: not named in: $looked"; continue; }
  repo=$work/$kind
  mkdir -p "$repo/$(dirname "$marker")" && echo "// $marker" >"$repo/$marker" && g init -q && g add -A \
    && g commit -qm marker || { fail "$kind: commit marker"; continue; }
  SHMB_DRIFT_SINCE=HEAD "$drift" "$repo" >"$work/out" 2>/dev/null
  rc=$?
  files=$(awk '$1 == "gone" || $1 == "same" { print $3 }' "$work/out")
  nfiles=$(echo "$files" | grep -c .)
  if [ "$rc" -eq $((nfiles > 1)) ] && [ "$nfiles" -ge "$min" ] && [ "$nfiles" -eq "$(wc -l <"$work/out")" ] \
    && grep -q "^same .*$marker" "$work/out" && [ "$(grep -c '^same ' "$work/out")" -eq 1 ]; then ok
  else fail "$kind, its marker alone: exit $rc, $nfiles files: $(cat "$work/out")"; fi
  missing=""
  for f in $files; do
    # docs/models.md names TENT's files relative to mooncake-transfer-engine/tent/,
    # Flow-IPC's as a folder and then the names in it.
    grep -qF "${f#mooncake-transfer-engine/tent/}" "$src/docs/models.md" \
      || { grep -qF "\`$(dirname "$f")/\`" "$src/docs/models.md" && grep -qF "\`$(basename "$f")\`" "$src/docs/models.md"; } \
      || missing="$missing $f"
  done
  [ -z "$missing" ] && ok || fail "$kind: followed but not named in docs/models.md:$missing"

  for f in $files; do mkdir -p "$repo/$(dirname "$f")" && echo "// $f" >"$repo/$f"; done
  g add -A && g commit -qm base --allow-empty || fail "$kind: commit base"
  base=$(git -C "$repo" rev-parse HEAD)
  SHMB_DRIFT_SINCE=$base "$drift" "$repo" >"$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" -eq 0 ] && [ "$(grep -c '^same ' "$work/out")" -eq "$nfiles" ] && ok \
    || fail "$kind at the base: exit $rc, expected every file same: $(cat "$work/out" "$work/err")"

  edited=$(echo "$files" | grep -m1 "/$edited\$")
  printf 'a\nb\n' >>"$repo/$edited" && g commit -qam edit || fail "$kind: commit edit"
  SHMB_DRIFT_SINCE=$base "$drift" "$repo" >"$work/out" 2>"$work/err"
  rc=$?
  line=$(grep "^changed " "$work/out")
  [ "$rc" -eq 1 ] && [ "$(echo "$line" | grep -c .)" -eq 1 ] && echo "$line" | grep -qF "$edited" \
    && echo "$line" | grep -q "1 commits since ${base:0:9}, +2 -0" \
    && [ "$(grep -c '^same ' "$work/out")" -eq $((nfiles - 1)) ] && ok \
    || fail "$kind, one edit: exit $rc: $(cat "$work/out")"
  grep -q "1 of $nfiles files changed" "$work/err" && ok || fail "$kind summary: $(cat "$work/err")"

  SHMB_DRIFT_SINCE=$base "$drift" "$repo" "$base" >"$work/out" 2>/dev/null
  rc=$?
  [ "$rc" -eq 0 ] && ok || fail "$kind, COMMIT=base: exit $rc: $(cat "$work/out")"
  bad_input "$kind: base not in the repository" "$drift" "$repo"

  gone=$(echo "$files" | grep -m1 "/$removed\$")
  g rm -q "$gone" && g commit -qm remove || fail "$kind: commit remove"
  git clone -q --bare "$repo" "$work/$kind.git" 2>/dev/null || fail "$kind: bare clone"
  SHMB_DRIFT_SINCE=$base "$drift" "$work/$kind.git" >"$work/out" 2>/dev/null
  rc=$?
  [ "$gone" = "$edited" ] && nchanged=0 || nchanged=1
  [ "$rc" -eq 1 ] && grep -q "^gone .*$gone" "$work/out" \
    && [ "$(grep -c '^changed ' "$work/out")" -eq "$nchanged" ] && ok \
    || fail "$kind, bare clone, a file removed: exit $rc: $(cat "$work/out")"
done <<<"$kinds"

repo=$work/Mooncake
bad_input "no such path" "$drift" "$work/nowhere"
mkdir -p "$work/plain"
bad_input "not a repository" "$drift" "$work/plain"
bad_input "no such commit" "$drift" "$repo" no_such_rev
bad_input "no arguments" "$drift"
bad_input "too many arguments" "$drift" "$repo" HEAD extra
finish
