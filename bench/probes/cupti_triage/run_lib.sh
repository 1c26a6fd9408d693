#!/usr/bin/env bash
# Issue 33, on the GPU machine: KernelPro's in-process profiler library
# (server/measure/src/cupti/kp_cupti.cpp) built with g++ against CUPTI and
# loaded into the five-kernel probe program (each launch twice: the first
# range-profiled, the second SASS-patched), timed against the program alone.
# Writes OUTDIR/out.tsv (the library's records), OUTDIR/modules/*.sass (nvdisasm
# -c -g of the saved modules) and OUTDIR/log.txt: the recording behind
# server/measure/tests/fixtures/cupti/.
# Usage: bash bench/probes/cupti_triage/run_lib.sh OUTDIR [program.cu]
set -u
cd "$(dirname "$0")/../../.."
O=$1; SRC=${2:-tests/fixtures/h200-probe/kernels.cu}; W=$(mktemp -d)
mkdir -p "$O/modules"; export PATH=$PATH:/usr/local/cuda/bin
C=/usr/local/cuda/extras/CUPTI; [ -f $C/include/cupti_range_profiler.h ] || C=/usr/local/cuda/targets/x86_64-linux
L=$C/lib64; [ -d $L ] || L=$C/lib
echo "CUPTI=$C L=$L" > "$O/log.txt"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
s=$(date +%s%N); g++ -std=c++17 -O2 -shared -fPIC -I$C/include -I/usr/local/cuda/include server/measure/src/cupti/kp_cupti.cpp \
  -o "$W/kp.so" -L$L -lcupti -lcuda -Wl,-rpath,$L >> "$O/log.txt" 2>&1; echo "build $(ms $s) ms" >> "$O/log.txt"
sed -E 's/^(\s*)([a-z_0-9]+<<<)/\1for (int rep_ = 0; rep_ < 2; ++rep_) \2/' "$SRC" > "$W/prog.cu"
nvcc -arch=sm_90 -O3 -lineinfo -o "$W/prog" "$W/prog.cu" >> "$O/log.txt" 2>&1
M=$(sed -n '/^pub const RANGE_METRICS/,/^];/p' server/profile/src/cupti.rs | grep -o '"[^"]*"' | tr -d '"' | paste -sd,)
SASS=$(sed -n '/^pub const SASS_METRICS/,/^];/p' server/profile/src/cupti.rs | grep -o '("smsp[^"]*"' | tr -d '("' | paste -sd,)
# As kernelpro runs it: the counters (range profiler, then SASS metrics on
# each kernel's second launch), then the stall reasons (PC sampling) in a run
# of their own; both appended to out.tsv.
for i in 1 2; do
  rm -f "$O/out.tsv" "$O"/modules/*; s=$(date +%s%N)
  KP_CUPTI_OUT="$O/out.tsv" KP_CUPTI_DIR="$O/modules" KP_CUPTI_PLAN=range,sass KP_CUPTI_METRICS=$M KP_CUPTI_SASS=$SASS CUDA_INJECTION64_PATH="$W/kp.so" "$W/prog" > "$O/prog.txt" 2>&1
  echo "in-process counters, run $i: rc=$? $(ms $s) ms" >> "$O/log.txt"
  s=$(date +%s%N)
  KP_CUPTI_OUT="$O/out.tsv" KP_CUPTI_DIR="$W" KP_CUPTI_PLAN=pc CUDA_INJECTION64_PATH="$W/kp.so" "$W/prog" > "$O/prog_pc.txt" 2>&1
  echo "in-process stall sampling, run $i: rc=$? $(ms $s) ms" >> "$O/log.txt"
done
s=$(date +%s%N); "$W/prog" > /dev/null 2>&1; echo "program alone $(ms $s) ms" >> "$O/log.txt"
for c in "$O"/modules/*.cubin; do nvdisasm -c -g "$c" > "${c%.cubin}.sass" 2>&1; rm -f "$c"; done
cat "$O/log.txt"
