#!/usr/bin/env bash
# The loop copy kernel must be a loop in the machine code, not a call to
# memcpy or memmove that the compiler put back.
#   asm_copy_loop.sh LIBSHMBENCH.a
set -u
asm=$(objdump -dr --no-show-raw-insn "$1" | awk '/<shmb_copy_loop>:/,/^$/')
if [ -z "$asm" ]; then
  echo "FAIL: shmb_copy_loop not found in $1"
  echo "0 passed, 1 failed"
  exit 1
fi
if echo "$asm" | grep -Eq 'mem(cpy|move)'; then
  echo "FAIL: shmb_copy_loop calls memcpy or memmove:"
  echo "$asm" | grep -E 'mem(cpy|move)'
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"
