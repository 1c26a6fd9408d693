#!/usr/bin/env bash
# Issue 33 probe, on the GPU machine: the triage counters of each kernel of
# the probe program read in-process by CUPTI's range profiler (inject.cpp,
# loaded through CUDA_INJECTION64_PATH) against one ncu launch collecting the
# same metrics; wall times and values side by side.
# Usage: bash bench/probes/cupti_triage/run.sh OUTDIR [program.cu]
set -uo pipefail
cd "$(dirname "$0")/../../.."
DEST=$1; SRC=${2:-tests/fixtures/h200-probe/kernels.cu}
mkdir -p "$DEST"; W=$(mktemp -d)
export LC_ALL=C PATH=$PATH:/usr/local/cuda/bin
CUPTI=${CUPTI:-/usr/local/cuda/extras/CUPTI}
[ -d "$CUPTI/include" ] || CUPTI=$(dirname "$(find / -name cupti_range_profiler.h -path '*include*' 2>/dev/null | head -1)")/..
echo "CUPTI at $CUPTI" | tee "$DEST/env.txt"
ls "$CUPTI/lib64" "$CUPTI/lib" 2>/dev/null >> "$DEST/env.txt"
LIBDIR=$CUPTI/lib64; [ -d "$LIBDIR" ] || LIBDIR=$CUPTI/lib
g++ -std=c++17 -O2 -shared -fPIC -I"$CUPTI/include" -I/usr/local/cuda/include bench/probes/cupti_triage/inject.cpp \
  -o "$W/libkp_inject.so" -L"$LIBDIR" -lcupti -lcuda -Wl,-rpath,"$LIBDIR" 2> "$DEST/build.txt" || { cat "$DEST/build.txt"; exit 1; }
# Each launch twice: the first is range-profiled, the second SASS-patched.
sed -E 's/^(\s*)([a-z_0-9]+<<<)/\1for (int rep_ = 0; rep_ < 2; ++rep_) \2/' "$SRC" > "$W/prog.cu"
nvcc -arch=sm_90 -lineinfo -o "$W/prog" "$W/prog.cu" || exit 1
nvcc -arch=sm_90 -cubin -lineinfo -o "$W/prog.cubin" "$W/prog.cu" && nvdisasm -c -g "$W/prog.cubin" > "$DEST/prog.sass" 2>&1
# t LOG CMD...: runs CMD with its output in LOG, prints the wall time.
t() { local log=$1; shift; local s e; s=$(date +%s%N); "$@" > "$log" 2>&1; local rc=$?; e=$(date +%s%N); echo "$(( (e - s) / 1000000 )) ms rc=$rc"; }
METRICS=$(sed -n '/kDefaultMetrics =/,/;$/p' bench/probes/cupti_triage/inject.cpp | grep -o '"[a-z0-9_]*__[^"]*,*"'  | tr -d '"' | tr -d '\n' | sed 's/,$//')
{
  echo "program: $(t "$W/prog.out" "$W/prog")"
  for i in 1 2 3; do
    rm -f "$W/cupti.tsv"
    echo "cupti run $i: $(t "$W/prog_cupti.out" env KP_CUPTI_OUT="$W/cupti.tsv" CUDA_INJECTION64_PATH="$W/libkp_inject.so" "$W/prog")"
  done
  for i in 1 2; do
    echo "ncu same metrics, first launch of each kernel, run $i: $(t "$W/ncu.out" ncu --config-file off --clock-control none --apply-rules no --kernel-id :::1 --metrics "$METRICS" --csv --page raw --print-units base --log-file "$W/ncu.csv" "$W/prog")"
  done
} | tee "$DEST/times.txt"
cp "$W/cupti.tsv" "$W/ncu.csv" "$DEST/" 2>/dev/null
tail -5 "$W/prog_cupti.out" > "$DEST/prog_cupti_tail.txt"
echo "$METRICS" > "$DEST/metrics.txt"
