#!/bin/bash
# Ran on the working tree of this session with GJ__COARSE_BESIDE_BLOCKS_PER_SM = 1 (the default then: "after" = one block beside; committed default two, the models measured at two here with the knob)
# session 29, call 5: the coarse kernel at one block a level and multiprocessor beside the main backward (new default)
# against four (GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM=4: the previous launches), C1/C2/C4 both layouts beside bench_tcnn,
# two rounds interleaved; the 64x2 and 64x4 models at 1/2/4, two rounds; bench_tcnn_jit 64x2
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
J=$PWD/.gpu/bt/bench_tcnn_jit
T=$PWD/.gpu/bt1/bench_tcnn
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
BEFORE="env GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM=4"
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=${CACHE:-$(mktemp -d)} timeout 60 "$@" | tr -d '\n\t')}" >> $OUT/g.jsonl; }
P="-p backward,backward_input,step -i 30 --calls 0 -j"
for r in 1 2; do
  for c in C1 C2 C4; do
    case $c in C1) CFG=$C1; D=3;; C2) CFG=$C1; D=2;; C4) CFG=$C4; D=3;; esac
    record tcnn/$c/r$r $T $c --json
    for l in soa aos; do
      record before/$c/$l/r$r $BEFORE $G bench -c "$CFG" -d $D -l $l $P
      record after/$c/$l/r$r $G bench -c "$CFG" -d $D -l $l $P
    done
  done
done
C2x=$(mktemp -d); C4x=$(mktemp -d)
for r in 1 2; do
  for b in 1 2 4; do
    CACHE=$C2x record m64x2/b$b/r$r env GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM=$b $G bench --config "$(m 64 2)" --dims 3 -i 30 --json
    CACHE=$C4x record m64x4/b$b/r$r env GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM=$b $G bench --config "$(m 64 4)" --dims 3 -i 30 --json
  done
done
CUDA_CACHE_PATH=$(mktemp -d) timeout 60 $J --cache-dir $(mktemp -d) --skip-unfused > $OUT/tcnn_jit_64x2.json 2>/dev/null
echo done >> $OUT/log.txt
