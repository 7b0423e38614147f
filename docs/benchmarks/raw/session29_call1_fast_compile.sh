#!/bin/bash
# prepared in session 28 for the next one: what NVRTC's --Ofast-compile costs the kernels (GRIDJIT_FAST_COMPILE,
# a measuring knob since f767020): the 64 x 2 and 64 x 4 models' compile_ms and every pass, C1's passes; and the
# GPU step tests with mid (the code differs: are the results still right?).
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
record() { local tag=$1; shift; echo "{\"tag\":\"$tag\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 "$@" | tr -d '\n\t')}" >> $OUT/bench.jsonl; }
for fc in mid; do
  (cd .gpu/rt && GRIDJIT_FAST_COMPILE=$fc GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./test_gpu_train_step) > $OUT/train_step_$fc.txt 2>&1; echo "rc=$?" >> $OUT/train_step_$fc.txt
done
for r in 1 2; do
  for fc in none min mid; do
    for shape in "64 2" "64 4"; do record fc$fc/m${shape// /x}/r$r env GRIDJIT_FAST_COMPILE=$fc $G bench --config "$(m $shape)" --dims 3 -i 30 --json; done
    record fc$fc/C1/r$r env GRIDJIT_FAST_COMPILE=$fc $G bench -c "$C1" -d 3 -i 30 --calls 0 -j
  done
done
