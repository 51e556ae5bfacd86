#!/bin/sh
# One command for the whole study (from the repo root, after the README setup):
#   sh dev/kernel_study/run_all.sh
# ~10 min on a quiet 2-core machine. Results: dev/kernel_study/out/results_r1.json, results_r48.json.
set -e
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
uptime
$PY dev/kernel_study/study.py --rows 1 --token-rows 1 --rounds 5 --min-time 0.3
cp dev/kernel_study/out/results.json dev/kernel_study/out/results_r1.json
$PY dev/kernel_study/study.py --rows 4,8 --no-token --rounds 5 --min-time 0.3 \
  --variants v1_dequant_contract_u8,v2_perlane_xs_u8,v3_perlane_xs_i4,v4_custom_c_q4_1
cp dev/kernel_study/out/results.json dev/kernel_study/out/results_r48.json
$PY dev/kernel_study/check_q8_0.py
gcc -O3 -march=x86-64-v3 dev/kernel_study/ubench.c dev/kernel_study/lse_qmv.c -o dev/kernel_study/build/ubench
dev/kernel_study/build/ubench
uptime
