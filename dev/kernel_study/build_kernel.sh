#!/bin/sh
# Builds the microkernel objects linked into IREE's embedded ELF (plain gcc, no libc, no clang needed).
#   build/lse_qmv.o    : R=1 path "B" (x permuted to nibble order, broadcast + vpsrlvd unpack)  <- default
#   build/lse_qmv_a.o  : R=1 path "A" (pand/psrlw + vpmovzxbd unpack)
set -e
cd "$(dirname "$0")"
mkdir -p build
FLAGS="-O3 -march=x86-64-v3 -mavx2 -mfma -mf16c -ffreestanding -fno-builtin -fPIC -nostdlib \
  -fno-stack-protector -fno-asynchronous-unwind-tables -fno-exceptions -fvisibility=hidden"
${CC:-cc} $FLAGS -c lse_qmv.c -o build/lse_qmv.o
${CC:-cc} $FLAGS -DLSE_R1_A -c lse_qmv.c -o build/lse_qmv_a.o
