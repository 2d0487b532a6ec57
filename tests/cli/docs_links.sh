#!/usr/bin/env bash
# The README stays at most 160 lines, and every relative link of it and docs/*.md (outside fenced
# code) names a file or folder that exists.
#   docs_links.sh SOURCE_DIR
set -u
src=${1:?usage: docs_links.sh SOURCE_DIR}
max_lines=160
passed=0
failed=0
fail() {
  echo "FAIL: $*"
  failed=$((failed + 1))
}

lines=$(wc -l <"$src/README.md")
if [ "$lines" -le "$max_lines" ]; then
  passed=$((passed + 1))
else
  fail "README.md has $lines lines, more than $max_lines: move the reference into docs/"
fi

# Prints "LINE TARGET" for every link target outside fenced code blocks.
links() {
  awk '
    /^[[:space:]]*```/ { fenced = !fenced; next }
    fenced { next }
    {
      line = $0
      while (match(line, /\]\([^)[:space:]]+\)/)) {
        print NR, substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}

for file in "$src/README.md" "$src"/docs/*.md; do
  [ -f "$file" ] || continue
  dir=$(dirname "$file")
  name=${file#"$src"/}
  while read -r nr target; do
    case "$target" in
      http://* | https://* | mailto:* | '#'*) continue ;;
    esac
    path=${target%%#*}
    if [ -e "$dir/$path" ]; then
      passed=$((passed + 1))
    else
      fail "$name:$nr: link to $target, which does not exist"
    fi
  done < <(links "$file")
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
