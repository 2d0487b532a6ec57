# Helpers of the command-line tests: sourced, not run.
#   check NAME COMMAND...   runs a check and counts it
#   expect_usage_error FLAG ARGS...: exit 2 and one stderr line naming --FLAG
set -u
passed=0
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  failed=$((failed + 1))
}

ok() {
  passed=$((passed + 1))
}

# Segments of ours left in /dev/shm under prefix $1 (without the leading '/').
leftovers() {
  ls /dev/shm 2>/dev/null | grep -c "^$1" || true
}

# Lines of a stderr file other than warnings (the load-average warning comes
# and goes with the host's load; a usage error is printed before it).
error_lines() {
  grep -vc ": warning: " "$1" || true
}

# expect_usage_error BIN FLAG ARGS...
expect_usage_error() {
  local bin=$1 flag=$2
  shift 2
  "$bin" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$work/err")
  if [ "$rc" -ne 2 ]; then
    fail "$(basename "$bin") $*: exit $rc, expected 2"
  elif [ "$lines" -ne 1 ]; then
    fail "$(basename "$bin") $*: $lines stderr lines, expected 1: $(cat "$work/err")"
  elif ! grep -q -- "--$flag" "$work/err"; then
    fail "$(basename "$bin") $*: stderr does not name --$flag: $(cat "$work/err")"
  elif [ -s "$work/out" ]; then
    fail "$(basename "$bin") $*: wrote to stdout"
  else
    ok
  fi
}

# Data rows of a table (lines after the header, which follows the # lines).
table_rows() {
  grep -v '^#' "$1" | tail -n +2
}

# expect_signal_cleanup SIGNAL DELAY PREFIX COMMAND...: starts COMMAND, sends
# SIGNAL after DELAY seconds; it must die of it and leave no PREFIX segment.
expect_signal_cleanup() {
  local sig=$1 delay=$2 pfx=$3
  shift 3
  set -m
  "$@" >/dev/null 2>&1 &
  local pid=$!
  sleep "$delay"
  kill -"$sig" "$pid"
  wait "$pid"
  local rc=$?
  set +m
  local want=$((128 + $(kill -l "$sig")))
  [ "$rc" -eq "$want" ] && ok || fail "SIG$sig: exit $rc, expected $want"
  [ "$(leftovers "$pfx")" -eq 0 ] && ok || fail "SIG$sig left $(leftovers "$pfx") segments"
}

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
