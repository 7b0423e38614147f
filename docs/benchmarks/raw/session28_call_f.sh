#!/bin/bash
# session 28, call 6: C1-C4 beside bench_tcnn, before (GRIDJIT_COARSE_BESIDE_MIN_POINTS=0 GRIDJIT_COARSE_BLOCKS_PER_SM=2: the previous launches, same kernels) and after (defaults), two rounds interleaved; then, as time allows, models beside bench_tcnn_jit and small batches
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
J=$PWD/.gpu/bt/bench_tcnn_jit
T=$PWD/.gpu/bt1/bench_tcnn
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
BEFORE="env GRIDJIT_COARSE_BESIDE_MIN_POINTS=0 GRIDJIT_COARSE_BLOCKS_PER_SM=2"
record() { # record TAG CMD...: one JSON line {"tag", "r": output}
  local tag=$1; shift
  echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 "$@" | tr -d '\n\t')}" >> $OUT/bench.jsonl
}
left() { [ $(( ${DEADLINE:-230} - ($(date +%s) - S) )) -gt $1 ]; }
for r in 1 2; do
  for c in C1 C2 C3 C4; do
    case $c in C1) CFG=$C1; D=3;; C2) CFG=$C1; D=2;; C3) CFG=$C3; D=3;; C4) CFG=$C4; D=3;; esac
    record tcnn/$c/r$r $T $c --json
    record before/$c/soa/r$r $BEFORE $G bench -c "$CFG" -d $D -l soa -i 30 --calls 0 -j
    record after/$c/soa/r$r $G bench -c "$CFG" -d $D -l soa -i 30 --calls 0 -j
  done
  echo "encodings round $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
for shape in "64 2" "64 4"; do left 15 && record after/m${shape// /x}/r1 $G bench --config "$(m $shape)" --dims 3 -i 30 --json; done
left 20 && { CUDA_CACHE_PATH=$(mktemp -d) timeout 40 $J --cache-dir $(mktemp -d) --skip-unfused > $OUT/tcnn_jit_64x2.json 2>/dev/null; }
echo "models $(( $(date +%s) - S ))s" >> $OUT/log.txt
for P in 65536 262144; do
  left 5 && record before/C1/soa/P$P $BEFORE $G bench -c "$C1" -d 3 -P $P -p backward,backward_input,step -i 50 --calls 0 -j
  left 5 && record after/C1/soa/P$P $G bench -c "$C1" -d 3 -P $P -p backward,backward_input,step -i 50 --calls 0 -j
done
left 35 && { CUDA_CACHE_PATH=$(mktemp -d) timeout 35 $J --cache-dir $(mktemp -d) --hidden-layers 4 > $OUT/tcnn_jit_64x4.json 2>/dev/null; }
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
