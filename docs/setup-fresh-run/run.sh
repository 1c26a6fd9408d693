#!/bin/bash
# The README's two set-up commands on a fresh clone, each logged with its exit status and wall time.
set -u
cd "$HOME"
mkdir -p logs
{
  echo "user: $(id)"; echo "os: $(. /etc/os-release; echo $PRETTY_NAME)"; echo "nproc: $(nproc)"
  for t in cargo rustc gcc g++ python3 node npm git; do printf '%s: ' $t; ($t --version 2>&1 || echo missing) | head -1; done
  for t in nvcc nvim chromium rg code-server; do printf '%s: ' $t; command -v $t || echo "not installed"; done
} > logs/env.txt 2>&1
mkdir -p logs; git clone /mnt/main kernelpro > logs/clone.log 2>&1 || { echo "clone failed" >> ~/logs/summary.txt; exit 1; }
cd kernelpro
echo "commit: $(git log --oneline -1)" >> ~/logs/summary.txt
for cmd in "bash scripts/demo.sh" "bash scripts/test.sh"; do
  name=${cmd#bash scripts/}; name=${name%.sh}
  echo "start $cmd at $(date -u +%H:%M:%S)" >> ~/logs/summary.txt
  start=$(date +%s)
  nice -n 5 $cmd > ~/logs/$name.log 2>&1
  rc=$?
  echo "$cmd: exit $rc, wall $(( $(date +%s) - start )) s, ended $(date -u +%H:%M:%S)" >> ~/logs/summary.txt
done
