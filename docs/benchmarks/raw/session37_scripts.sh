# ===== .gpu/s37/call1.sh
#!/bin/bash
# Session 37, call 1 (H200): the whole GPU label on HEAD, the model workload beside tinycudann
# (two rounds), the PyTorch step's device copy traced to its op.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
left() { echo $(( ${LIMIT:-570} - (SECONDS - t0) )); }
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv >> $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=12 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu) > $OUT/ctest_gpu.txt 2>&1
echo "ctest gpu rc=$? $((SECONDS-t0)) s" >> $OUT/ctest_gpu.txt
log "gpu label"
wait $bpid; tail -3 /tmp/tcnn.log >> $OUT/progress.txt
log "tcnn built"
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
PYTHONPATH=$TP timeout $(( $(left) - 50 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 60 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
log "compare rc=$?"
[ $(left) -gt 30 ] && PYTHONPATH=$TP timeout $(( $(left) - 5 )) python3 .gpu/s37/dtod.py > $OUT/dtod.txt 2>&1
log "dtod rc=$?"
# ===== .gpu/s37/call2.sh
#!/bin/bash
# Session 37, call 2: ncu of the model's fused backward (where its time goes), the tiers' first
# calls with the info log (each program's NVRTC and store time on this host), and on an H200
# the model workload beside tinycudann.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
G=$ROOT/build/gridjit
t0=$SECONDS
left() { echo $(( ${LIMIT:-560} - (SECONDS - t0) )); }
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$NAME" >> $OUT/progress.txt
H200=0; case "$NAME" in *H200*) H200=1;; esac
if [ $H200 = 1 ]; then
  mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
  (cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
    TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=10 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
  bpid=$!
fi
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
{ nproc; df -T /tmp | tail -1; grep MHz /proc/cpuinfo | head -4; } > $OUT/host.txt
# 1. the tiers' first calls: every program's NVRTC and store time, three fresh caches
for r in 1 2 3; do
  D=$(mktemp -d)
  CUDA_CACHE_DISABLE=1 GRIDJIT_LOG_LEVEL=info GRIDJIT_CACHE_DIR=$D $G bench --config "$M" --dims 3 -P 65536 -i 20 --json > /tmp/t$r.json 2> /tmp/t$r.log
  echo "== run $r" >> $OUT/host.txt
  grep -o "compiled.*\|found.*\|tier.*\|fused.*" /tmp/t$r.log | cut -c1-200 >> $OUT/host.txt
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["compile_ms"])' /tmp/t$r.json >> $OUT/host.txt
done
log "compile runs"
# 2. ncu of the fused backward, one launch
export GRIDJIT_CACHE_DIR=/tmp/gjc_ncu
GRIDJIT_NETWORK_TIERS=0 timeout 150 ncu --kernel-name gj_network_backward --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
  --section MemoryWorkloadAnalysis --section LaunchStats --section ComputeWorkloadAnalysis \
  $G bench --config "$M" --dims 3 -i 20 > $OUT/ncu_backward.txt 2>&1
log "ncu rc=$?"
unset GRIDJIT_CACHE_DIR
if [ $H200 = 1 ]; then
  wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
  log "tcnn built"
  export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
  TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
  PYTHONPATH=$TP timeout $(( $(left) - 20 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 40 )) --json $OUT/model_compare_h200.json > $OUT/model_compare_h200.txt 2>&1
  log "compare rc=$?"
fi
# ===== .gpu/s37/knobs.sh
#!/bin/bash
# Session 37: the fused backward's occupancy knobs (8 warps a multiprocessor under ncu: issue-latency
# bound); which plan overrides give it a third block. Two rounds interleaved, 2^21 points.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib PATH=$PATH:/usr/local/cuda/bin
G=$PWD/build/gridjit
J=$OUT/knobs.jsonl
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
run() { label=$1; shift; env "$@" GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/k_$(echo "$label" | tr '/=' '__' | sed 's/_r[0-9]$//') \
  $G bench --config "$(model $W $H)" --dims 3 -i 30 --json 2>>$OUT/err.txt | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $J || echo "FAIL $label" >> $OUT/err.txt; }
for r in 1 2; do
  for m in 64x2 32x2; do
    W=${m%x*}; H=${m#*x}
    run $m/default/r$r X=1
    run $m/bs0/r$r GRIDJIT_NETWORK_BLOCK_SUMS=0
    run $m/bs0ss0/r$r GRIDJIT_NETWORK_BLOCK_SUMS=0 GRIDJIT_NETWORK_SMALL_SUMS=0
    run $m/bs0ss0mb3/r$r GRIDJIT_NETWORK_BLOCK_SUMS=0 GRIDJIT_NETWORK_SMALL_SUMS=0 GRIDJIT_NETWORK_MIN_BLOCKS=3
    run $m/bs0mb3/r$r GRIDJIT_NETWORK_BLOCK_SUMS=0 GRIDJIT_NETWORK_MIN_BLOCKS=3
  done
done
python3 - "$J" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line); p = d["passes"]
    print(d["label"], {k: round(v["median_ms"], 4) for k, v in p.items()})
PY
# ===== .gpu/s37/fused_sums.sh
#!/bin/bash
# Session 37: a model's fused backward with the network's weight gradients added to global memory
# each round (GRIDJIT_NETWORK_FUSED_BLOCK_SUMS=0) against the block sums (=1, the plan before),
# two rounds interleaved, 2^21 points; test_gpu_network on the new rule; the PyTorch model step.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib PATH=$PATH:/usr/local/cuda/bin
G=$PWD/build/gridjit
t0=$SECONDS
left() { echo $(( 520 - (SECONDS - t0) )); }
J=$OUT/fused_sums.jsonl
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
run() { label=$1; v=$2; GRIDJIT_NETWORK_FUSED_BLOCK_SUMS=$v GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/f_${m}_$v \
  $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $J || echo "FAIL $label" >> $OUT/err.txt; }
for r in 1 2; do
  for m in 64x2 64x3 64x4 32x2 16x2 64x1; do
    [ $(left) -gt 150 ] || break
    run $m/block/r$r 1
    run $m/global/r$r 0
  done
done
echo "benches $((SECONDS-t0)) s" >> $OUT/progress.txt
(cd build && timeout 80 ctest --output-on-failure -R test_gpu_network) > $OUT/ctest_network.txt 2>&1
echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
export GRIDJIT_LIBRARY=$PWD/build/libgridjit.so.0 PYTHONPATH=$PWD/python/src
for r in 1 2; do for v in 1 0; do
  [ $(left) -gt 45 ] || break
  GRIDJIT_NETWORK_FUSED_BLOCK_SUMS=$v timeout 60 python3 python/benchmarks/tcnn_workloads.py --package gridjit --workload model --json /tmp/torch_$v$r.json > /tmp/torch_$v$r.txt 2>&1
  echo "torch v=$v r=$r: $(grep -o '2^21 points): inference [0-9.]* ms, training step with Adam [0-9.]* ms' /tmp/torch_$v$r.txt) $(grep -o '2^18 points): inference [0-9.]* ms, training step with Adam [0-9.]* ms' /tmp/torch_$v$r.txt)" >> $OUT/progress.txt
done; done
python3 - "$J" >> $OUT/progress.txt <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line); p = d["passes"]
    print(d["label"], {k: round(v["median_ms"], 4) for k, v in p.items() if k in ("forward", "backward", "step", "backward_input", "inference")})
PY
