#!/bin/bash
# session 27, call 3: the step with the encoding's forward inside the network's kernel (GRIDJIT_NETWORK_STEP_ENCODE=1, a branch build)
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
G=$PWD/.gpu/rt/gridjit
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$1" --dims 3 -i 30 --json; }
(cd .gpu/rt && GRIDJIT_NETWORK_STEP_ENCODE=1 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./test_gpu_train_step) > $OUT/test_train_step_encode.txt 2>&1; echo "rc=$?" >> $OUT/test_train_step_encode.txt
echo "tests $(( $(date +%s) - S ))s" >> $OUT/log.txt
for r in 1 2; do
 for shape in "64 2" "64 4" "32 2"; do
  [ $r = 2 ] && [ "$shape" = "32 2" ] && continue
  echo "{\"round\":$r,\"v\":\"split\",\"m\":\"$shape\",\"r\":$(bench "$(m $shape)")}" >> $OUT/bench.jsonl
  echo "{\"round\":$r,\"v\":\"encode\",\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_ENCODE=1 bench "$(m $shape)")}" >> $OUT/bench.jsonl
  echo "{\"round\":$r,\"v\":\"encode_min3\",\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_ENCODE=1 GRIDJIT_NETWORK_STEP_MIN_BLOCKS=3 bench "$(m $shape)")}" >> $OUT/bench.jsonl
  [ "$shape" = "64 2" ] && echo "{\"round\":$r,\"v\":\"encode_w8\",\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_ENCODE=1 GRIDJIT_NETWORK_WARPS=8 bench "$(m $shape)")}" >> $OUT/bench.jsonl
 done
 echo "round $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
