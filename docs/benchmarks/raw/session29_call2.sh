#!/bin/bash
# Ran on the build of 3ecd20d, where GRIDJIT_COARSE_BLOCKS_PER_SM set the coarse blocks both beside the main kernel and after it (at 2^21 points they run beside)
# coarse blocks per SM (2/3/4) beside the main backward kernel at the greatest priority: C1, C2, C4, S1, S6, rays, models
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
S1='{"otype":"HashGrid","n_levels":8,"n_features_per_level":1,"log2_hashmap_size":17}'
S6='{"otype":"TiledGrid","base_resolution":8,"per_level_scale":1.5}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 "$@" | tr -d '\n\t')}" >> $OUT/cb.jsonl; }
P="-p backward,backward_input,step -i 30 --calls 0 -j"
for r in 1 2; do
  for cb in 2 3 4; do
    for l in soa aos; do
      record C1/$l/cb$cb/r$r env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 3 -l $l $P
      record C2/$l/cb$cb/r$r env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 2 -l $l $P
    done
    record m64x2/cb$cb/r$r env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench --config "$(m 64 2)" --dims 3 -i 30 --json
  done
done
for cb in 2 3 4; do
  for l in soa aos; do record C4/$l/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C4" -d 3 -l $l $P; done
  record C1rays/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 3 --input rays $P
  record C2rays/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$C1" -d 2 --input rays $P
  record S1/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$S1" -d 2 $P
  record S6/soa/cb$cb env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb $G bench -c "$S6" -d 2 $P
done
