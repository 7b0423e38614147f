#!/bin/bash
# session 26, call 5: the backward kernels' weight-gradient sums in registers: GPU tests, torch network tests, benches against budget 0
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/build/gridjit
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
bench() { GRIDJIT_CACHE_DIR=$(mktemp -d) $G bench --config "$1" --dims 3 -i 30 --json; }
for r in 1 2; do
 for shape in "64 2" "64 3" "128 2" "16 2" "64 4"; do
  [ $r = 2 ] && [ "$shape" != "64 2" ] && [ "$shape" != "64 3" ] && continue
  for b in 0 rule; do
   if [ $b = rule ]; then unset GRIDJIT_NETWORK_STEP_SUM_REGISTERS; else export GRIDJIT_NETWORK_STEP_SUM_REGISTERS=0; fi
   echo "{\"round\":$r,\"budget\":\"$b\",\"m\":\"$shape\",\"r\":$(bench "$(m $shape)")}" >> $OUT/bench.jsonl
  done
  unset GRIDJIT_NETWORK_STEP_SUM_REGISTERS
 done
done
N='{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2}'
for b in 0 rule; do
  if [ $b = rule ]; then unset GRIDJIT_NETWORK_STEP_SUM_REGISTERS; else export GRIDJIT_NETWORK_STEP_SUM_REGISTERS=0; fi
  echo "{\"budget\":\"$b\",\"m\":\"net 32-64x2-16\",\"r\":$(GRIDJIT_CACHE_DIR=$(mktemp -d) $G bench --config "$N" --dims 32 --output-dims 16 -i 30 --json)}" >> $OUT/bench.jsonl
done
unset GRIDJIT_NETWORK_STEP_SUM_REGISTERS
(cd build && timeout 200 ctest -L gpu --output-on-failure) > $OUT/gpu_ctest.txt 2>&1
PYTHONPATH=$PWD/python/src GRIDJIT_LIBRARY=$PWD/build/libgridjit.so.0 timeout 150 python3 -m pytest python/tests -q -rs -p no:cacheprovider -k "network or model or Network" > $OUT/pytest.txt 2>&1
echo "pytest rc=$?" >> $OUT/pytest.txt
echo done
