#!/bin/bash
# session 27, call 4: the whole suite (every label) and the Python tests on the final code; then compute-sanitizer on the step
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
S=$(date +%s)
GRIDJIT_PREBUILT=1 GRIDJIT_BUILD_DIR=build timeout 480 tools/quickstart.sh gpu > $OUT/suite.txt 2>&1
echo "rc=$?" >> $OUT/suite.txt
echo "suite $(( $(date +%s) - S ))s" >> $OUT/log.txt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
export CUDA_CACHE_DISABLE=1
for tool in racecheck memcheck; do
  left=$(( 585 - ($(date +%s) - S) ))
  [ $left -lt 30 ] && break
  GRIDJIT_CACHE_DIR=$(mktemp -d) timeout $left compute-sanitizer --tool $tool build/gridjit bench --config "$M" --dims 3 -P 60008 -i 1 > $OUT/sanitizer_$tool.txt 2>&1
  echo "rc=$?" >> $OUT/sanitizer_$tool.txt
done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
