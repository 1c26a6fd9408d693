#!/usr/bin/env bash
# The GPU-machine batch: doctor, the GPU tests, the profiling benchmark
# (two-stage vs --set full) and the optimizer benchmark (MCTS vs greedy vs
# random). Expects the release binary and test binaries in .devbin/ (bench/devbin.sh).
# Usage: bash bench/gpu_run.sh PHASE OUTDIR   (PHASE: tests | profile | optimize STRATEGIES BUDGET)
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/devbin_env.sh
PHASE=$1; DEST=$2; OUT=$(mktemp -d); mkdir -p "$DEST"
# The device tool returns at most 8 files: everything goes into one tarball.
trap 'tar czf "$DEST/$PHASE.tgz" -C "$OUT" . ; cat "$OUT"/*summary* "$OUT"/*times* 2>/dev/null' EXIT
trap 'exit 143' TERM
B=${KERNELPRO_BIN:?no .devbin/kernelpro: run bench/devbin.sh first}
case "$PHASE" in
tests)
  { nvidia-smi -L; which nvcc ncu; nvcc --version | tail -2; } > "$OUT/env.txt" 2>&1
  $B doctor > "$OUT/doctor.txt" 2>&1
  # The test binaries built here (bench/devbin.sh) find the repository and the toolkit's nvcc through the environment.
  for t in .devbin/gpu-harness .devbin/gpu-pipeline .devbin/cute-tests; do KERNELPRO_NVCC=$(command -v nvcc) $t --ignored --test-threads=1 --nocapture > "$OUT/$(basename $t).txt" 2>&1; done
  $B run examples/saxpy.cu --kernel saxpy > "$OUT/run_saxpy.txt" 2>&1
  $B run examples/saxpy.cu --kernel transpose >> "$OUT/run_saxpy.txt" 2>&1
  for i in 1 2; do $B run bench/copy.cu --no-energy --json > "$OUT/copy_$i.json" 2>&1; done
  python3 bench/torch_copy.py > "$OUT/torch_copy.txt" 2>&1
  python3 -c "import json;a=json.load(open('$OUT/copy_1.json'));b=json.load(open('$OUT/copy_2.json'));print('harness copy median ms', a['kernel']['timing']['median_ms'], b['kernel']['timing']['median_ms'], 'sd', a['kernel']['timing']['stddev_ms'])" > "$OUT/copy_summary.txt" 2>&1
  cat "$OUT/torch_copy.txt" >> "$OUT/copy_summary.txt"
  ;;
profile)
  # Issue 33's table: the in-process profile (CUPTI), ncu's one launch and --set full,
  # side by side on each file (harness mode for files with launch specs, program mode
  # for the five-kernel probe), with each one's findings (line and code) for the
  # same-lines check and each run's stages (name and seconds, from the report's `stages`); then
  # profile-on-save with each backend (SAVE_BACKENDS, default both); then profile_table.md.
  FILES=${COMPARE_FILES:-tests/fixtures/h200-probe/kernels.cu bench/kernels/strided_copy.cu bench/kernels/transpose.cu tests/fixtures/naive/layernorm/layernorm_rowptr.cu tests/fixtures/naive/sum/sum_atomic_1d.cu tests/fixtures/naive/softmax/softmax_rowptr_double.cu}
  $B profile examples/saxpy.cu --kernel saxpy --backend cupti > "$OUT/profile_warm.txt" 2>&1  # builds the library once
  # ... and learns whether PC sampling is refused after the range profiler here
  # (then later profiles sample in a process beside the first: measure::cupti::PcMemo).
  memo="${XDG_CACHE_HOME:-$HOME/.cache}/kernelpro/cupti/pc-sampling.tsv"
  { echo "== $memo"; cat "$memo" 2>/dev/null; } >> "$OUT/profile_warm.txt"
  for f in $FILES; do
    k=$(basename $f .cu)
    for mode in cupti ncu full; do
      flag="--backend $mode"; [ $mode = full ] && flag="--full"
      # The in-process runs' raw records (each kernel's range, SASS and sampling times) beside the JSON.
      keep=""; [ $mode = cupti ] && keep="$OUT/records_$k"
      s=$(date +%s%N); KERNELPRO_CUPTI_KEEP=$keep $B profile $f $flag --json > "$OUT/compare_${k}_$mode.json" 2> "$OUT/compare_${k}_$mode.err"; e=$(date +%s%N)
      found=$(python3 -c "import json;r=json.load(open('$OUT/compare_${k}_$mode.json'))['report'];print(r.get('backend'), round(r['pass_secs'],2), round(r['export_secs'],2), [k['kernel']+':'+str((k.get('triage') or {}).get('class')) for k in r['kernels']], sorted(set(str(f['span']['start']['line']+1)+' '+str(f.get('code')) for k in r['kernels'] for f in k['findings'])), 'stages', '; '.join(s['name']+' '+str(round(s['secs'],2)) for s in r.get('stages',[])))" 2>&1)
      echo "$k $mode wall $(( (e - s) / 1000000 )) ms $found" >> "$OUT/profile_times.txt"
    done
  done
  # Profile-on-save: how long after the compile's diagnostics the profile lands. The five-kernel
  # program's saves each edit one kernel (`FILE:KERNEL`): the other four keep their last profile.
  for backend in ${SAVE_BACKENDS:-cupti ncu}; do
    python3 bench/profile_on_save.py --kernelpro $B --backend $backend --reps 3 --out "$OUT/profile_on_save_$backend.tsv" --log "$OUT/profile_on_save_$backend.log" ${SAVE_FILES:-tests/fixtures/h200-probe/kernels.cu:transpose_conflicts bench/kernels/strided_copy.cu bench/kernels/transpose.cu tests/fixtures/naive/sum/sum_atomic_1d.cu} >> "$OUT/profile_times.txt" 2>&1
  done
  # docs/benchmarks.md's table: times, ratio, each stage's share, same findings on the same lines.
  python3 bench/profile_table.py "$OUT" > "$OUT/profile_table.md" 2>&1
  ;;
optimize)
  STRATS=${3:-mcts}; BUDGET=${4:-10}
  # Bandwidth of one run (bytes of all buffers over the median time): `gbps FILE.cu [--kernel K]`.
  gbps() { $B run "$@" --no-energy --json 2>/dev/null | python3 -c "import json,sys;print(json.load(sys.stdin)['kernel']['dram_gbps_estimate'])" 2>/dev/null || echo n/a; }
  echo "copy_64mib $(gbps bench/copy_64mib.cu) GB/s" >> "$DEST/bandwidth.txt"
  for f in ${FILES:-bench/kernels/*.cu}; do
    k=$(grep -o "__global__ void [A-Za-z_0-9]*" $f | head -1 | awk '{print $3}')
    # Every strategy starts from the same recorded profile of the original where there is one.
    rec=tests/fixtures/h200-kernelpro/$(basename $f .cu); imp=""; [ -d $rec ] && imp="--profile-import $rec"
    for s in $STRATS; do
      $B optimize $f --kernel $k --budget $BUDGET --strategy $s --no-energy $imp --json --out "$OUT/best_${k}_$s.cu" > "$OUT/opt_${k}_$s.json" 2> "$OUT/opt_${k}_$s.err"
      # The best version's bandwidth (bytes of all buffers over its median time), for the fraction of a same-size copy.
      [ -f "$OUT/best_${k}_$s.cu" ] && echo "$k $s $(gbps "$OUT/best_${k}_$s.cu" --kernel $k) GB/s" >> "$DEST/bandwidth.txt"
      # Appended straight to DEST so a run cut short still reports what finished.
      echo "$k $s $(python3 -c "import json;d=json.load(open('$OUT/opt_${k}_$s.json'));print(d['speedup'], d['evaluations'], d['original_ms'], d['best_ms'], [x['recipe'] for x in d['steps']])" 2>&1)" >> "$DEST/optimize_summary.txt"
    done
  done
  ;;
esac
