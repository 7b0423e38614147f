
# ---- session 51's scripts (.gpu/s51/call1.sh, call1b.sh, call2.sh): none ran, no device could be had
# ---- .gpu/s51/call1.sh
#!/bin/bash
# Session 51, call 1: (1) what a synchronised PyTorch step of the 64x2 model is made of, for
# gridjit.torch and tinycudann: step_host_time.py (synced vs pipelined, host phases, cProfile at
# 2^18, torch.profiler's kernels a step at both sizes); (2) compare_tcnn.py --workload model,
# two rounds; (3) ncu of the model's inference and fused backward.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
left() { echo $(( 590 - (SECONDS-t0) )); }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=11 taskset -c 4-15 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
for p in 18 21; do
  PYTHONPATH=$ROOT/python/src timeout 90 taskset -c 0-3 python3 python/benchmarks/step_host_time.py --package gridjit \
    --log2-points $p --profile $(( p == 18 ? 50 : 0 )) --kernels 20 --json $OUT/host_gridjit_$p.json > $OUT/host_gridjit_$p.txt 2>&1
  log "host gridjit $p rc=$?"
done
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt; log "tcnn built"
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch
for p in 18 21; do
  PYTHONPATH=$TP timeout 90 python3 python/benchmarks/step_host_time.py --package tinycudann \
    --log2-points $p --profile $(( p == 18 ? 50 : 0 )) --kernels 20 --json $OUT/host_tcnn_$p.json > $OUT/host_tcnn_$p.txt 2>&1
  log "host tcnn $p rc=$?"
done
PYTHONPATH=$TP:$ROOT/python/src timeout $(( $(left) - 5 )) python3 python/benchmarks/compare_tcnn.py --workload model,checkpoint --repeat 2 \
  --budget $(( $(left) - 20 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
log "compare rc=$?"
head -3 $OUT/host_*.txt >> $OUT/progress.txt
tail -25 $OUT/model_compare.txt >> $OUT/progress.txt
# ---- .gpu/s51/call1b.sh
#!/bin/bash
# Session 51, call 1b (a short call: the device budget left): step_host_time.py for gridjit.torch
# (2^18 with cProfile, 2^21; torch.profiler's kernels a step) while tinycudann builds on other
# cores, then the same for tinycudann; the synced steps of both are compare_tcnn.py's measure.
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
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=12 taskset -c 3-15 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
for p in 21 18; do
  PYTHONPATH=$ROOT/python/src timeout 70 taskset -c 0-2 python3 python/benchmarks/step_host_time.py --package gridjit \
    --log2-points $p --profile $(( p == 18 ? 30 : 0 )) --kernels 10 --json $OUT/host_gridjit_$p.json > $OUT/host_gridjit_$p.txt 2>&1
  log "host gridjit $p rc=$?"
done
head -3 $OUT/host_gridjit_*.txt >> $OUT/progress.txt
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt; log "tcnn built"
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch
for p in 21 18; do
  PYTHONPATH=$TP timeout 60 python3 python/benchmarks/step_host_time.py --package tinycudann \
    --log2-points $p --profile $(( p == 18 ? 30 : 0 )) --kernels 10 --json $OUT/host_tcnn_$p.json > $OUT/host_tcnn_$p.txt 2>&1
  log "host tcnn $p rc=$?"
done
head -3 $OUT/host_tcnn_*.txt >> $OUT/progress.txt
# ---- .gpu/s51/call2.sh
#!/bin/bash
# Session 51, call 2 (written in session 49): the whole suite on the GPU machine: every ctest
# label but exhaustive (the new shards of test_network_codegen and test_network_emulated among
# them), the GPU label, pytest.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
rm -rf build/tests/tmp build/Testing
(cd build && timeout 330 ctest -j16 --output-on-failure -LE 'gpu|exhaustive' > $OUT/ctest_nongpu.txt 2>&1; echo "nongpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
(cd build && timeout 150 ctest --output-on-failure -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
GRIDJIT_TEST_BUILD_DIR=$ROOT/build GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 PYTHONPATH=$ROOT/python/src timeout 100 python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
echo "pytest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
tail -3 $OUT/ctest_nongpu.txt $OUT/ctest_gpu.txt $OUT/pytest.txt >> $OUT/progress.txt
# ---- .gpu/s51/call1c.sh (ran on an H200: the session's one machine)
#!/bin/bash
# Session 51, call 1c (what the device budget left allows): step_host_time.py for gridjit.torch alone.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
for p in 21 18; do
  PYTHONPATH=$ROOT/python/src timeout 60 python3 python/benchmarks/step_host_time.py --package gridjit \
    --log2-points $p --iterations 100 --profile $(( p == 18 ? 30 : 0 )) --kernels 10 --json $OUT/host_gridjit_$p.json > $OUT/host_gridjit_$p.txt 2>&1
  echo "host gridjit $p rc=$? $SECONDS s" >> $OUT/progress.txt
done
head -3 $OUT/host_gridjit_*.txt >> $OUT/progress.txt
# ---- then, on the same warm H200 (three calls; bench_tcnn and bench_tcnn_jit carried as .gpu/bin/*.xz):
# the 64 x 2 model beside tiny-cuda-nn's JIT, two rounds
M() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":64,\"n_hidden_layers\":$1,\"n_output_dims\":16}}"; }
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 50 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused > $OUT/tcnn_jit_r$r.json 2>&1
  GRIDJIT_CACHE_DIR=/tmp/gjc timeout 40 build/gridjit bench --config "$(M 2)" --dims 3 -i 30 --output fp16 --json > $OUT/gj_64x2_r$r.json 2>&1
done
# C1-C4 beside bench_tcnn, both layouts (run twice, one call each; the second also C1 and C3 along rays)
for c in C1 C2 C3 C4; do d=3; [ $c = C2 ] && d=2
  echo "$c tcnn $(timeout 25 /tmp/bt $c --json | tr -d '\n')" >> $OUT/enc.txt
  for l in soa aos; do
    echo "$c $l $(GRIDJIT_CACHE_DIR=/tmp/gjc2 timeout 25 build/gridjit bench -c "${!c}" -d $d -l $l -p forward,forward_dydx,backward,step -i 30 --calls 0 -j | tr -d '\n')" >> $OUT/enc.txt
  done
done
for c in C1 C3; do
  echo "$c rays_soa $(GRIDJIT_CACHE_DIR=/tmp/gjc2 timeout 25 build/gridjit bench -c "${!c}" -d 3 -l soa --input rays -p forward,step -i 30 --calls 0 -j | tr -d '\n')" >> $OUT/enc2.txt
done
