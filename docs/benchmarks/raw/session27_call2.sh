#!/bin/bash
# session 27, call 2: which fetch pays where: models 16x2, 32x2, 128x2, 64x3 with prefetch 0/1/2/3; networks alone 0/1, two rounds
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
G=$PWD/.gpu/rt/gridjit
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
n() { echo "{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2}"; }
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$1" --dims 3 -i 30 --json; }
for shape in "16 2" "32 2" "128 2" "64 3"; do
  for p in 0 1 2 3; do
   echo "{\"prefetch\":$p,\"m\":\"$shape\",\"r\":$(GRIDJIT_NETWORK_STEP_PREFETCH=$p bench "$(m $shape)")}" >> $OUT/bench.jsonl
  done
  echo "$shape $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
for r in 1 2; do
 for shape in "64 2" "128 2" "32 4"; do
  for p in 0 1; do
   echo "{\"round\":$r,\"prefetch\":$p,\"m\":\"net $shape\",\"r\":$(GRIDJIT_NETWORK_STEP_PREFETCH=$p GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$(n $shape)" --dims 32 --output-dims 16 -i 30 --json)}" >> $OUT/bench.jsonl
  done
 done
 echo "nets $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
