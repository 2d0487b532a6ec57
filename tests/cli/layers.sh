#!/usr/bin/env bash
# scripts/layers.py: the tree's layers hold, at most 8 files on any chain (exit 0); a planted circle,
# call up, call sideways and a chain of 9 are all found (exit 1); bad usage exits 2.
#   layers.sh LIBRARY SOURCE_DIR
lib=$1
src=$(cd "$2" && pwd)
source "$src/tests/cli/cli_lib.sh"
layers=$src/scripts/layers.py

python3 "$layers" --max-layers 8 "$lib" "$src/src" >"$work/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -qx 'circles 0' "$work/out" && grep -qx 'upward calls 0' "$work/out" \
   && grep -qx 'sideways calls 0' "$work/out" && grep -q '^  longest: .* > ' "$work/out"; then ok
else fail "the library: exit $rc: $(cat "$work/out")"; fi

# The planted faults: x <-> y in alloc/, base/a -> models/b, lookup/l -> alloc/x.
tree=$work/tree
mkdir -p "$tree/src/alloc" "$tree/src/base" "$tree/src/models" "$tree/src/lookup" "$work/obj"
echo 'int y(int); int x(int n) { return n ? y(n - 1) : 0; }' >"$tree/src/alloc/x.c"
echo 'int x(int); int y(int n) { return n ? x(n - 1) : 1; }' >"$tree/src/alloc/y.c"
echo 'int b(void); int a(void) { return b(); }' >"$tree/src/base/a.c"
echo 'int b(void) { return 2; }' >"$tree/src/models/b.c"
echo 'int x(int); int l(void) { return x(3); }' >"$tree/src/lookup/l.c"
for f in alloc/x alloc/y base/a models/b lookup/l; do
  cc -c -o "$work/obj/$(basename $f).c.o" "$tree/src/$f.c" || fail "cc $f.c"
done
ar rcs "$work/planted.a" "$work"/obj/*.o
python3 "$layers" "$work/planted.a" "$tree/src" >"$work/out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -qx '  circle: alloc/x.c alloc/y.c' "$work/out" \
   && grep -qx '  up: base/a.c -> models/b.c' "$work/out" \
   && grep -qx '  sideways: lookup/l.c -> alloc/x.c' "$work/out"; then ok
else fail "planted faults: exit $rc: $(cat "$work/out")"; fi

# A chain of 9 files in base/, no other fault: found only with a limit below 9.
rm -f "$work"/obj/*.o
for i in 1 2 3 4 5 6 7 8 9; do
  [ "$i" -lt 9 ] && echo "int c$((i + 1))(void); int c$i(void) { return c$((i + 1))(); }" >"$tree/src/base/c$i.c" \
    || echo "int c$i(void) { return 9; }" >"$tree/src/base/c$i.c"
  cc -c -o "$work/obj/c$i.c.o" "$tree/src/base/c$i.c" || fail "cc c$i.c"
done
ar rcs "$work/chain.a" "$work"/obj/c*.o
python3 "$layers" --max-layers 9 "$work/chain.a" "$tree/src" >"$work/out" 2>&1
[ $? -eq 0 ] && grep -qx 'layers 9' "$work/out" && ok || fail "a chain of 9 within 9: $(cat "$work/out")"
python3 "$layers" --max-layers 8 "$work/chain.a" "$tree/src" >"$work/out" 2>&1
[ $? -eq 1 ] && grep -qx '  longest: base/c1.c > base/c2.c > base/c3.c > base/c4.c > base/c5.c > base/c6.c > base/c7.c > base/c8.c > base/c9.c' "$work/out" \
  && ok || fail "a chain of 9 above 8: $(cat "$work/out")"

python3 "$layers" "$lib" >"$work/out" 2>&1
[ $? -eq 2 ] && ok || fail "one argument: not exit 2"
python3 "$layers" --max-layers eight "$lib" "$src/src" >"$work/out" 2>&1
[ $? -eq 2 ] && ok || fail "--max-layers eight: not exit 2"
finish
