#!/bin/bash
# session 26, call 3: register-sum budgets of the step, two rounds interleaved; ncu of the 64x2 step kernel
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
J=$PWD/.gpu/bt/bench_tcnn_jit
G=$PWD/.gpu/rt/gridjit
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) $G bench --config "$1" --dims 3 -i 30 --json; }
for r in 1 2; do
 for b in 0 16 24 32; do
   echo "{\"round\":$r,\"budget\":$b,\"m\":\"64 2\",\"r\":$(GRIDJIT_NETWORK_STEP_SUM_REGISTERS=$b bench "$(m 64 2)")}" >> $OUT/bench.jsonl
 done
 for shape in "16 2" "32 2" "128 2" "64 3" "64 4"; do
  for b in 0 24; do
   echo "{\"round\":$r,\"budget\":$b,\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_SUM_REGISTERS=$b bench "$(m $shape)")}" >> $OUT/bench.jsonl
  done
 done
done
CUDA_CACHE_PATH=$(mktemp -d) $J --cache-dir $(mktemp -d) --skip-unfused > $OUT/tcnn.json 2>/dev/null
for b in 0 32; do
GRIDJIT_NETWORK_STEP_SUM_REGISTERS=$b GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 120 ncu --clock-control none -k regex:train_features -c 1 --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis $G bench --config "$(m 64 2)" --dims 3 -i 1 > $OUT/ncu_$b.txt 2>&1
done
echo done
