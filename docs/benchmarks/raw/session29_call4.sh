#!/bin/bash
# Ran on an experiment build of 3ecd20d with a temporary GRIDJIT_COARSE_BLOCKS_PER_LEVEL (blocks per level, absolute; not kept): pl132 = one block a level and multiprocessor on the H200, pl264 two, pl528 four
# coarse blocks per level beside (absolute: 33 66 99 132 264 528) and in order (per SM 1 2 4), EXPERIMENT build
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
S1='{"otype":"HashGrid","n_levels":8,"n_features_per_level":1,"log2_hashmap_size":17}'
S6='{"otype":"TiledGrid","base_resolution":8,"per_level_scale":1.5}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 "$@" | tr -d '\n\t')}" >> $OUT/f.jsonl; }
P="-p backward,backward_input,step -i 30 --calls 0 -j"
run() { # tag env...
  local t=$1; shift
  record C1/soa/$t env "$@" $G bench -c "$C1" -d 3 -l soa $P
  record C1/aos/$t env "$@" $G bench -c "$C1" -d 3 -l aos $P
  record C2/soa/$t env "$@" $G bench -c "$C1" -d 2 -l soa $P
  record C2/aos/$t env "$@" $G bench -c "$C1" -d 2 -l aos $P
  record S1/soa/$t env "$@" $G bench -c "$S1" -d 2 -l soa $P
  record S6/soa/$t env "$@" $G bench -c "$S6" -d 2 -l soa $P
  record C1rays/soa/$t env "$@" $G bench -c "$C1" -d 3 --input rays -l soa $P
  record C2rays/soa/$t env "$@" $G bench -c "$C1" -d 2 --input rays -l soa $P
  record C1P18/soa/$t env "$@" $G bench -c "$C1" -d 3 -P 262144 -l soa $P
}
for pl in 33 66 132 264 528; do run pl$pl GRIDJIT_COARSE_BLOCKS_PER_LEVEL=$pl; done
for cb in 1 2 4; do run order$cb GRIDJIT_COARSE_BESIDE_MIN_POINTS=0 GRIDJIT_COARSE_BLOCKS_PER_SM=$cb; done
for pl in 66 132 528; do record m64x2/pl$pl env GRIDJIT_COARSE_BLOCKS_PER_LEVEL=$pl $G bench --config "$(m 64 2)" --dims 3 -i 30 --json; done
