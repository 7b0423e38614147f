#!/bin/bash
# session 28, call 5: the whole suite (every label) and the Python tests on the final code; then compute-sanitizer memcheck of a model step and of C1's backward past the side stream's threshold
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
S=$(date +%s)
GRIDJIT_PREBUILT=1 GRIDJIT_BUILD_DIR=build timeout 480 tools/quickstart.sh gpu > $OUT/suite.txt 2>&1
echo "rc=$?" >> $OUT/suite.txt
echo "suite $(( $(date +%s) - S ))s" >> $OUT/log.txt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
export CUDA_CACHE_DISABLE=1
left=$(( 585 - ($(date +%s) - S) ))
[ $left -gt 30 ] && { GRIDJIT_CACHE_DIR=$(mktemp -d) timeout $left compute-sanitizer --tool memcheck build/gridjit bench --config "$M" --dims 3 -P 70008 -i 1 > $OUT/sanitizer_model.txt 2>&1; echo "rc=$?" >> $OUT/sanitizer_model.txt; }
left=$(( 585 - ($(date +%s) - S) ))
[ $left -gt 30 ] && { GRIDJIT_CACHE_DIR=$(mktemp -d) timeout $left compute-sanitizer --tool memcheck build/gridjit bench -c "$C1" -d 3 -P 70001 -p backward,backward_input,step -i 20 > $OUT/sanitizer_c1.txt 2>&1; echo "rc=$?" >> $OUT/sanitizer_c1.txt; }
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
