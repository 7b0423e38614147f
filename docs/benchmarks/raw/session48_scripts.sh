# session 48, call 1 (.gpu/s48/call1.sh)
#!/bin/bash
# Session 48, call 1 (written in session 47, not yet run): on the card that comes (an H200 for
# issue 18's figures): (1) the tests that failed in session 47's second call, as fixed, and the
# GPU step tests under the new rule, beside (2) cold compiles (CPU otherwise idle but for the
# tests), then (3) the C level beside tiny-cuda-nn's JIT, two rounds, while tinycudann builds,
# (4) the model through PyTorch beside tinycudann.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
left() { echo $(( 590 - (SECONDS - t0) )); }
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
tag() { python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$1"; }
for r in 1 2 3 4; do
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) GRIDJIT_LOG_LEVEL=info timeout 60 build/gridjit bench \
      --config "$(model 64 2)" --dims 3 -P 65536 -i 5 --output fp16 --json 2>>$OUT/compile_log.txt ) | tag compile/r$r >> $OUT/compile.jsonl
done
log "compiles"
rm -rf build/tests/tmp
(cd build && timeout 200 ctest --output-on-failure -j3 -R "test_network_launch_path|test_gpu_train_step|test_gpu_network" > $OUT/ctest.txt 2>&1; echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=10 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
one() { ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=/tmp/gjc_$2 timeout 40 build/gridjit bench --config "$(model ${2%x*} ${2#*x})" --dims 3 -i 30 --output fp16 --json 2>>$OUT/err.txt ) | tag "$1" >> $OUT/ab.jsonl; }
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2/r$r 64x2; one 64x4/r$r 64x4
done
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
log "c level"
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl $OUT/tcnn_jit_64x4.jsonl $OUT/compile.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for f in sys.argv[2:4]:
    for l in open(f):
        d=json.loads(l); print(f.split("/")[-1], "jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"], "unfused", d.get("unfused",{}).get("train_step_ms"))
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in p))
for l in open(sys.argv[4]):
    d=json.loads(l); print(d["label"], {k: round(v) for k, v in d["compile_ms"].items()})
PY
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout 60 python3 -m pytest python/tests/test_torch_network_gpu.py -q -rs -p no:cacheprovider -k "fp16_output" > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
PYTHONPATH=$TP timeout $(( $(left) - 10 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 25 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
log "compare rc=$?"

# session 48, call 2 (the whole suite, one command line)
# rm -rf build/tests/tmp build/Testing; (cd build && ctest --output-on-failure -j2 -L gpu) & (cd build && ctest --output-on-failure -j12 -LE gpu) & wait; GRIDJIT_TEST_BUILD_DIR=$PWD/build PYTHONPATH=$PWD/python/src GRIDJIT_LIBRARY=$PWD/build/libgridjit.so.0 python3 -m pytest python/tests -q -rs -p no:cacheprovider

# session 49, call 1 (.gpu/s49/call1.sh), written in session 48: no device could be started for it then
#!/bin/bash
# Session 49, call 1 (written in session 48, not yet run): (1) test_gpu_train_step twice (its fp16
# tolerance, 6b93d68, not yet run on a GPU) beside the tinycudann build; (2) step_host_time.py:
# where a synchronised PyTorch step waits on the host, gridjit.torch (2^18 with cProfile, 2^21)
# then tinycudann (same); (3) ncu of the 64x2 model's inference and fused backward kernels, and
# of C3's forward into SoA and AoS (issue 17's largest point-major gap).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=10 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
rm -rf build/tests/tmp
for r in 1 2; do (cd build && timeout 60 ctest --output-on-failure -R test_gpu_train_step > $OUT/ctest_train_step_$r.txt 2>&1; echo "train_step r$r rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt); done
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch
for p in 18 21; do
  PYTHONPATH=$ROOT/python/src timeout 45 python3 python/benchmarks/step_host_time.py --package gridjit --log2-points $p --profile $(( p == 18 ? 100 : 0 )) > $OUT/host_gridjit_$p.txt 2>&1
  PYTHONPATH=$TP timeout 45 python3 python/benchmarks/step_host_time.py --package tinycudann --log2-points $p --profile $(( p == 18 ? 100 : 0 )) > $OUT/host_tcnn_$p.txt 2>&1
done
log "host"
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 90 ncu --clock-control none -k 'regex:^gj_network_(inference|backward)$' -c 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  build/gridjit bench --config "$M" --dims 3 -i 20 --output fp16 > $OUT/ncu_model_64x2.txt 2>&1
log "ncu model rc=$?"
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4}'
for l in soa aos; do
  GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 ncu --clock-control none -k regex:forward -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    build/gridjit bench -c "$C3" -d 3 -l $l -p forward -i 20 --calls 0 > $OUT/ncu_c3_forward_$l.txt 2>&1
  log "ncu c3 $l rc=$?"
done
head -3 $OUT/host_*.txt >> $OUT/progress.txt
