#!/bin/bash
# session 28, call 1: the coarse backward kernel beside the main one (GRIDJIT_COARSE_BESIDE_MIN_POINTS 0 off / 1 on) and its blocks per SM (2 / 4)
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
J=$PWD/.gpu/bt/bench_tcnn_jit
T=$PWD/.gpu/bt1/bench_tcnn
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
for t in test_gpu_passes test_gpu_train_step test_gpu_api; do
  (cd .gpu/rt && GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$t) > $OUT/$t.txt 2>&1; echo "rc=$?" >> $OUT/$t.txt
done
echo "tests $(( $(date +%s) - S ))s" >> $OUT/log.txt
for c in C1 C2 C4; do timeout 40 $T $c --json > $OUT/tcnn_$c.json 2>/dev/null; done
CUDA_CACHE_PATH=$(mktemp -d) timeout 60 $J --cache-dir $(mktemp -d) --skip-unfused > $OUT/tcnn_64x2.json 2>/dev/null
eb() { # eb NAME CONFIG DIMS BESIDE BLOCKS [points]
  echo "{\"c\":\"$1\",\"beside\":$4,\"cb\":$5,\"P\":${6:-2097152},\"r\":$(GRIDJIT_COARSE_BESIDE_MIN_POINTS=$4 GRIDJIT_COARSE_BLOCKS_PER_SM=$5 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $G bench -c "$2" -d $3 -P ${6:-2097152} -p backward,backward_input,step -i 30 --calls 0 -j)}" >> $OUT/enc.jsonl
}
for r in 1 2; do
  for v in "0 2" "1 2" "0 4" "1 4"; do
    eb C1 "$C1" 3 $v; eb C2 "$C1" 2 $v; eb C4 "$C4" 3 $v
  done
  echo "enc round $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
  for v in "0 2" "1 2" "1 4"; do
    for shape in "64 2" "64 4"; do
      set -- $v
      echo "{\"round\":$r,\"beside\":$1,\"cb\":$2,\"m\":\"$shape\",\"r\":$(GRIDJIT_COARSE_BESIDE_MIN_POINTS=$1 GRIDJIT_COARSE_BLOCKS_PER_SM=$2 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$(m $shape)" --dims 3 -i 30 --json)}" >> $OUT/model.jsonl
    done
  done
  echo "model round $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
for v in "0 2" "1 2"; do eb C1 "$C1" 3 $v 262144; eb C1 "$C1" 3 $v 65536; done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
