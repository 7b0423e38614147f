#!/bin/bash
# session 28, call 7 (the machine still warm after call 6): the models before, C1-C4 point-major before / after (one round), 16 / 32 / 128 x 2 after
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s); G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
BEFORE="env GRIDJIT_COARSE_BESIDE_MIN_POINTS=0 GRIDJIT_COARSE_BLOCKS_PER_SM=2"
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 30 "$@" | tr -d '\n\t')}" >> $OUT/bench.jsonl; }
left() { [ $(( 120 - ($(date +%s) - S) )) -gt $1 ]; }
for shape in "64 2" "64 4"; do left 12 && record before/m${shape// /x}/r1 $BEFORE $G bench --config "$(m $shape)" --dims 3 -i 30 --json; done
for c in C1 C2 C3 C4; do
  case $c in C1) CFG=$C1; D=3;; C2) CFG=$C1; D=2;; C3) CFG=$C3; D=3;; C4) CFG=$C4; D=3;; esac
  left 6 && record before/$c/aos/r1 $BEFORE $G bench -c "$CFG" -d $D -l aos -i 30 --calls 0 -j
  left 6 && record after/$c/aos/r1 $G bench -c "$CFG" -d $D -l aos -i 30 --calls 0 -j
done
for shape in "32 2" "128 2" "16 2"; do left 12 && record after/m${shape// /x}/r1 $G bench --config "$(m $shape)" --dims 3 -i 30 --json; done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
