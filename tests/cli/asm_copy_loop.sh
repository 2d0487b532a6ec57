#!/usr/bin/env bash
# The loop copy kernel in the machine code is a loop of 8-byte words, neither a memcpy/memmove call
# nor a vector loop the compiler made of it.
#   asm_copy_loop.sh LIBSHMBENCH.a
set -u
lib=$1
passed=0
failed=0
fail() {
  echo "FAIL: $*"
  failed=$((failed + 1))
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

asm=$(objdump -dr --no-show-raw-insn "$lib" | awk '/<shmb_copy_loop>:/,/^$/')
if [ -z "$asm" ]; then
  fail "shmb_copy_loop not found in $lib"
  finish
fi

if echo "$asm" | grep -Eq 'mem(cpy|move|set)'; then
  fail "shmb_copy_loop calls memcpy, memmove or memset: $(echo "$asm" | grep -E 'mem(cpy|move|set)')"
else
  passed=$((passed + 1))
fi

if ! objdump -f "$lib" | grep -q 'x86-64'; then
  echo "not x86-64: the instruction checks are skipped"
  finish
fi

# Instructions only, "mnemonic operands" (objdump: "  addr:<TAB>insn").
insns=$(echo "$asm" | awk -F'\t' 'NF >= 2 && $1 ~ /^ *[0-9a-f]+:$/ {print $2}')

vector=$(echo "$insns" | grep -E '%[xyz]mm[0-9]|%k[0-7]|^v|^(movdq|movup|movap|movnt|movhp|movlp|lddqu)')
[ -z "$vector" ] && passed=$((passed + 1)) || fail "vector instructions in shmb_copy_loop:
$vector"

# Every instruction that touches memory moves 8 bytes through a 64-bit
# general register, or one byte (the tail); none moves 2, 4 or 16 bytes.
r64='%r([abcd]x|[sd]i|bp|[89]|1[0-5])'
r8='%([abcd]l|[sd]il|bpl|r([89]|1[0-5])b)'
mem='-?(0x[0-9a-f]+)?\(%[a-z0-9]+(,%[a-z0-9]+(,[1248])?)?\)'
odd=$(echo "$insns" | grep -E '\(' | grep -Ev '^lea|nop' \
  | grep -Ev "^movq? +$mem,$r64\$" | grep -Ev "^movq? +$r64,$mem\$" \
  | grep -Ev "^movzbl +$mem,%(e[abcd]x|e[sd]i|r([89]|1[0-5])d)\$" | grep -Ev "^movb? +($r8,$mem|$mem,$r8)\$")
[ -z "$odd" ] && passed=$((passed + 1)) || fail "memory accesses other than 8-byte and 1-byte moves:
$odd"

load=$(echo "$insns" | grep -Ec "^movq? +$mem,$r64\$")
store=$(echo "$insns" | grep -Ec "^movq? +$r64,$mem\$")
[ "$load" -ge 1 ] && [ "$store" -ge 1 ] && passed=$((passed + 1)) \
  || fail "no 8-byte load and store through a 64-bit register ($load loads, $store stores)"

# A loop: a conditional jump back to an earlier address of the function.
back=0
while read -r at insn target _; do
  [ "$insn" != jmp ] && [ $((16#$target)) -lt $((16#${at%:})) ] && back=$((back + 1))
done < <(echo "$asm" | grep -E $'^ *[0-9a-f]+:\tj[a-z]+ +[0-9a-f]+ <')
[ "$back" -ge 1 ] && passed=$((passed + 1)) || fail "no backward conditional jump: shmb_copy_loop is not a loop"

finish
