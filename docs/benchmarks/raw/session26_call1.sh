#!/bin/bash
# session 26, call 1: upper bound of the step's weight-gradient atomics; HEAD's GPU step tests
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
J=$PWD/.gpu/bt/bench_tcnn_jit
nvidia-smi --query-gpu=name,clocks.sm --format=csv > $OUT/gpu.txt
M64='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
M644='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":4,"n_output_dims":16}}'
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) $1/gridjit bench --config "$2" --dims 3 -i 30 --json; }
#(timeout 300 .gpu/rt/test_gpu_train_step; echo rc=$?; timeout 300 .gpu/rt/test_gpu_network; echo rc=$?) > $OUT/tests.txt 2>&1
for r in 1 2; do
 for b in rt exp; do
  for w in 0 8; do
   if [ $w = 0 ]; then unset GRIDJIT_NETWORK_WARPS; else export GRIDJIT_NETWORK_WARPS=$w; fi
   echo "{\"round\":$r,\"build\":\"$b\",\"warps\":$w,\"m\":\"64x2\",\"r\":$(bench .gpu/$b "$M64")}" >> $OUT/bench.jsonl
   [ $r = 1 ] && echo "{\"round\":$r,\"build\":\"$b\",\"warps\":$w,\"m\":\"64x4\",\"r\":$(bench .gpu/$b "$M644")}" >> $OUT/bench.jsonl
  done
 done
 unset GRIDJIT_NETWORK_WARPS
done
CUDA_CACHE_PATH=$(mktemp -d) $J --cache-dir $(mktemp -d) > $OUT/tcnn.json 2>&1
echo done
