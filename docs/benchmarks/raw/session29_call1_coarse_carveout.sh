#!/bin/bash
# prepared in session 28 for the next one: why C1's point-major backward gains less from the side stream
# (1.667 against feature-major 1.631: issue 17 asks within 2 %). Knobs only, no code change:
# the staging launch's carveout (GRIDJIT_STAGE_CARVEOUT=0 leaves it to the driver) and the coarse blocks.
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 "$@" | tr -d '\n\t')}" >> $OUT/bench.jsonl; }
for r in 1 2; do
  for l in soa aos; do
    for cb in 2 3 4; do
      for sc in 1 0; do
        record $l/cb$cb/carve$sc/r$r env GRIDJIT_COARSE_BLOCKS_PER_SM=$cb GRIDJIT_STAGE_CARVEOUT=$sc $G bench -c "$C1" -d 3 -l $l -p backward,backward_input,step -i 30 --calls 0 -j
      done
    done
  done
done
