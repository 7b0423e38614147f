#!/bin/bash
# Ran on the build of 3ecd20d, where GRIDJIT_COARSE_BLOCKS_PER_SM set the coarse blocks both beside the main kernel and after it (at 2^21 points they run beside)
# coarse blocks per SM 1..8 (beside the main backward at the greatest priority), point-major backward_input levels per thread, small batches
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
S1='{"otype":"HashGrid","n_levels":8,"n_features_per_level":1,"log2_hashmap_size":17}'
S2='{"otype":"HashGrid","n_levels":4,"n_features_per_level":8}'
S5='{"otype":"HashGrid","n_levels":12,"log2_hashmap_size":18,"interpolation":"Smoothstep"}'
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 "$@" | tr -d '\n\t')}" >> $OUT/e.jsonl; }
P="-p backward,backward_input -i 30 --calls 0 -j"
for cb in 1 2 3 4 5 6 8; do
  record C1/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 3 -l soa $P
  record C1/aos/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 3 -l aos $P
  record C2/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 2 -l soa $P
  record C2/aos/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 2 -l aos $P
  record S1/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$S1" -d 2 -l soa $P
  record S2/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$S2" -d 3 -l soa $P
  record S5/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$S5" -d 4 -l soa $P
done
for g in 4 8 16; do
  record C1/aos/lpt$g env GRIDJIT_COARSE_BLOCKS_PER_SM=2 $G bench -c "$C1" -d 3 -l aos --levels-per-thread $g $P
  record C2/aos/lpt$g env GRIDJIT_COARSE_BLOCKS_PER_SM=2 $G bench -c "$C1" -d 2 -l aos --levels-per-thread $g $P
done
for n in 65536 262144; do for cb in 2 4; do
  record C1/soa/P$n/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 3 -P $n -l soa $P
done; done
