#!/bin/bash
# session 26, call 2: the step's weight-gradient sums in registers: budgets, shapes, tcnn beside
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
J=$PWD/.gpu/bt/bench_tcnn_jit
G=$PWD/.gpu/rt/gridjit
(timeout 300 .gpu/rt/test_gpu_train_step; echo rc=$?; timeout 300 .gpu/rt/test_gpu_network; echo rc=$?) > $OUT/tests.txt 2>&1
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) $G bench --config "$1" --dims 3 -i 30 --json; }
tj() { CUDA_CACHE_PATH=$(mktemp -d) $J --cache-dir $(mktemp -d) "$@"; }
for r in 1 2; do
 for shape in "64 2" "64 4"; do
  bs="0 32 64 128"; [ $r = 2 ] && bs="0 64"
  for b in $bs; do
   echo "{\"round\":$r,\"budget\":$b,\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_SUM_REGISTERS=$b bench "$(m $shape)")}" >> $OUT/bench.jsonl
  done
 done
 echo "{\"round\":$r,\"m\":\"64 2\",\"tcnn\":$(tj --skip-unfused)}" >> $OUT/tcnn.jsonl
done
for shape in "16 2" "32 2" "128 2" "64 8"; do
  for b in 0 64; do
   echo "{\"round\":1,\"budget\":$b,\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_SUM_REGISTERS=$b bench "$(m $shape)")}" >> $OUT/bench.jsonl
  done
done
echo "{\"round\":1,\"m\":\"64 4\",\"tcnn\":$(tj --hidden-layers 4)}" >> $OUT/tcnn.jsonl
GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 200 compute-sanitizer --tool memcheck $G bench --config "$(m 64 4)" --dims 3 -P 65536 -i 2 > $OUT/memcheck.txt 2>&1
GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 100 compute-sanitizer --tool racecheck $G bench --config "$(m 64 2)" --dims 3 -P 16384 -i 1 > $OUT/racecheck.txt 2>&1
echo done
