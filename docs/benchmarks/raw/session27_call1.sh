#!/bin/bash
# session 27, call 1: the step's fetches ahead (GRIDJIT_NETWORK_STEP_PREFETCH 0 none = HEAD's kernel, 1 targets, 2 features, 3 both)
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
J=$PWD/.gpu/bt/bench_tcnn_jit
G=$PWD/.gpu/rt/gridjit
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$1" --dims 3 -i 30 --json; }
(cd .gpu/rt && GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./test_gpu_train_step) > $OUT/test_train_step.txt 2>&1; echo "rc=$?" >> $OUT/test_train_step.txt
(cd .gpu/rt && GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 100 ./test_gpu_network) > $OUT/test_network.txt 2>&1; echo "rc=$?" >> $OUT/test_network.txt
echo "tests $(( $(date +%s) - S ))s" >> $OUT/log.txt
CUDA_CACHE_PATH=$(mktemp -d) timeout 60 $J --cache-dir $(mktemp -d) --skip-unfused > $OUT/tcnn_64x2.json 2>/dev/null
for r in 1 2; do
 for p in 0 3 1 2; do
   echo "{\"round\":$r,\"prefetch\":$p,\"m\":\"64 2\",\"r\":$(GRIDJIT_NETWORK_STEP_PREFETCH=$p bench "$(m 64 2)")}" >> $OUT/bench.jsonl
 done
 for shape in "64 4" "32 2" "16 2" "128 2"; do
  [ $r = 2 ] && [ "$shape" != "64 4" ] && continue
  for p in 0 3; do
   echo "{\"round\":$r,\"prefetch\":$p,\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_PREFETCH=$p bench "$(m $shape)")}" >> $OUT/bench.jsonl
  done
 done
 echo "round $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
N='{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2}'
for p in 0 1; do
  echo "{\"prefetch\":$p,\"m\":\"net 32-64x2-16\",\"r\":$(GRIDJIT_NETWORK_STEP_PREFETCH=$p GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$N" --dims 32 --output-dims 16 -i 30 --json)}" >> $OUT/bench.jsonl
done
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 $J --cache-dir $(mktemp -d) --hidden-layers 4 > $OUT/tcnn_64x4.json 2>/dev/null
echo "benches $(( $(date +%s) - S ))s" >> $OUT/log.txt
for tool in memcheck racecheck; do
  [ $(( $(date +%s) - S )) -gt 480 ] && break
  GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 compute-sanitizer --tool $tool $G bench --config "$(m 64 2)" --dims 3 -P 65544 -i 2 > $OUT/sanitizer_$tool.txt 2>&1
  echo "rc=$?" >> $OUT/sanitizer_$tool.txt
done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
