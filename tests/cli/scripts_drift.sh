#!/usr/bin/env bash
# scripts/upstream_drift.sh on a small git repository made here: every file it
# follows is named in docs/models.md; the files as first committed (the base,
# given by SHMB_DRIFT_SINCE) read "same", exit 0; one file edited in a later
# commit reads "changed" with its commit count and diff, the others "same",
# exit 1; a removed file reads "gone", exit 1; COMMIT given (the base) reads
# all "same" again; a bare clone works as the checkout does; bad input (no
# such path, not a repository, no such commit, a base the repository lacks,
# too many arguments) exits 2 with one line.
#   scripts_drift.sh SOURCE_DIR
src=$(cd "$1" && pwd)
source "$src/tests/cli/cli_lib.sh"
drift=$src/scripts/upstream_drift.sh
repo=$work/mooncake
g() { git -C "$repo" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@" >/dev/null 2>&1; }

mkdir -p "$repo" && g init -q && echo x >"$repo/README.md" && g add README.md && g commit -qm empty \
  || { fail "cannot make a git repository"; finish; exit $?; }
# The files the script follows: against a repository that has none, each is "gone".
SHMB_DRIFT_SINCE=HEAD "$drift" "$repo" >"$work/out" 2>/dev/null
rc=$?
files=$(awk '$1 == "gone" { print $3 }' "$work/out")
nfiles=$(echo "$files" | grep -c .)
if [ "$rc" -eq 1 ] && [ "$nfiles" -ge 10 ] && [ "$nfiles" -eq "$(wc -l <"$work/out")" ]; then ok
else fail "empty repository: exit $rc, $nfiles gone of $(wc -l <"$work/out") lines"; fi
missing=""
for f in $files; do
  # docs/models.md names TENT's files relative to mooncake-transfer-engine/tent/.
  grep -qF "${f#mooncake-transfer-engine/tent/}" "$src/docs/models.md" || missing="$missing $f"
done
[ -z "$missing" ] && ok || fail "followed but not named in docs/models.md:$missing"

for f in $files; do mkdir -p "$repo/$(dirname "$f")" && echo "// $f" >"$repo/$f"; done
g add -A && g commit -qm base || fail "commit base"
base=$(git -C "$repo" rev-parse HEAD)

SHMB_DRIFT_SINCE=$base "$drift" "$repo" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^same ' "$work/out")" -eq "$nfiles" ] && ok \
  || fail "at the base: exit $rc, expected every file same: $(cat "$work/out" "$work/err")"

edited=$(echo "$files" | grep -m1 offset_allocator.cpp)
printf 'a\nb\n' >>"$repo/$edited" && g commit -qam edit || fail "commit edit"
SHMB_DRIFT_SINCE=$base "$drift" "$repo" >"$work/out" 2>"$work/err"
rc=$?
line=$(grep "^changed " "$work/out")
[ "$rc" -eq 1 ] && [ "$(echo "$line" | grep -c .)" -eq 1 ] && echo "$line" | grep -qF "$edited" \
  && echo "$line" | grep -q "1 commits since ${base:0:9}, +2 -0" \
  && [ "$(grep -c '^same ' "$work/out")" -eq $((nfiles - 1)) ] && ok \
  || fail "one edit: exit $rc: $(cat "$work/out")"
grep -q "1 of $nfiles files changed" "$work/err" && ok || fail "summary: $(cat "$work/err")"

SHMB_DRIFT_SINCE=$base "$drift" "$repo" "$base" >"$work/out" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] && ok || fail "COMMIT=base: exit $rc: $(cat "$work/out")"

gone=$(echo "$files" | grep -m1 slab.cpp)
g rm -q "$gone" && g commit -qm remove || fail "commit remove"
git clone -q --bare "$repo" "$work/bare.git" 2>/dev/null || fail "bare clone"
SHMB_DRIFT_SINCE=$base "$drift" "$work/bare.git" >"$work/out" 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] && grep -q "^gone .*$gone" "$work/out" && [ "$(grep -c '^changed ' "$work/out")" -eq 1 ] && ok \
  || fail "bare clone, a file removed: exit $rc: $(cat "$work/out")"

# bad_input WHAT ARGS...: exit 2, one line on stderr, nothing on stdout.
bad_input() {
  local what=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ ! -s "$work/out" ] && ok \
    || fail "$what: exit $rc, stderr $(cat "$work/err"), stdout $(head -2 "$work/out")"
}
bad_input "no such path" "$drift" "$work/nowhere"
mkdir -p "$work/plain"
bad_input "not a repository" "$drift" "$work/plain"
bad_input "no such commit" "$drift" "$repo" no_such_rev
bad_input "base not in the repository" "$drift" "$repo"
bad_input "no arguments" "$drift"
bad_input "too many arguments" "$drift" "$repo" HEAD extra
finish
