#!/bin/bash
# the fork's host cost per gj_backward call (side stream: 4 driver calls + the capture query) at 2^17 and 2^18
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 "$@" | tr -d '\n\t')}" >> $OUT/calls.jsonl; }
for r in 1 2; do
  for P in 131072 262144; do
    for mp in 0 65536; do
      record P$P/beside$mp/r$r env GRIDJIT_COARSE_BESIDE_MIN_POINTS=$mp $G bench -c "$C1" -d 3 -P $P -p backward -i 30 --calls 3000 -j
    done
  done
done
