#!/bin/bash
# session 26, call 4: the whole suite (every label) and the Python tests on the final code; then the 64x2 step's Adam and compile
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
S=$(date +%s)
GRIDJIT_PREBUILT=1 GRIDJIT_BUILD_DIR=build timeout 500 tools/quickstart.sh gpu > $OUT/suite.txt 2>&1
echo "rc=$?" >> $OUT/suite.txt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
for r in 1 2; do
  [ $(( $(date +%s) - S )) -gt 540 ] && break
  echo "{\"round\":$r,\"r\":$(CUDA_CACHE_DISABLE=1 GRIDJIT_CACHE_DIR=$(mktemp -d) build/gridjit bench --config "$M" --dims 3 -i 30 --json)}" >> $OUT/bench.jsonl
done
echo done
