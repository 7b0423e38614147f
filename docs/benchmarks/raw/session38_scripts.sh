#!/bin/bash
# Session 38: the GPU label and the Python lane on HEAD.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
(cd build && timeout 240 ctest --output-on-failure -j2 -L gpu) > $OUT/ctest_gpu.txt 2>&1
log "ctest -L gpu rc=$?"
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( 590 - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
#!/bin/bash
# Session 38: every label but gpu on HEAD, on the GPU machine.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
(cd build && timeout 400 ctest --output-on-failure -j16 -LE gpu) > $OUT/ctest_nongpu.txt 2>&1
echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
#!/bin/bash
# Session 38, call 1: the fused_training example with the module pipeline (demo checks, then --bench
# twice, beside the rule A/B of the fused backward on 64x2/64x1), tiny-cuda-nn JIT, the model beside tinycudann.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib PATH=$PATH:/usr/local/cuda/bin
G=$PWD/build/gridjit; t0=$SECONDS; left() { echo $(( 470 - (SECONDS - t0) )); }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=10 \
  python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
J=$OUT/ab.jsonl
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
GRIDJIT_CACHE_DIR=/tmp/ex timeout 100 build/examples/fused_training --out-dir /tmp > $OUT/example.txt 2>&1
echo "demo rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
for r in 1 2; do CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt; done
echo "tcnn_jit $((SECONDS-t0)) s" >> $OUT/progress.txt
for r in 1 2; do
  for m in 64x2 64x1; do for v in 1 0; do
    GRIDJIT_NETWORK_FUSED_BLOCK_SUMS=$v GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/f_${m}_$v $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/fbs$v/r$r" >> $J
  done; done
  echo "== bench round $r" >> $OUT/example.txt
  GRIDJIT_CACHE_DIR=/tmp/ex timeout 120 build/examples/fused_training --bench >> $OUT/example.txt 2>&1
  echo "bench rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
done
echo "ab $((SECONDS-t0)) s" >> $OUT/progress.txt
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
export GRIDJIT_LIBRARY=$PWD/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$PWD/python/src
PYTHONPATH=$TP timeout $(( $(left) - 10 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 30 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
echo "compare rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
#!/bin/bash
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
for tiers in 1 0; do
  echo "== GRIDJIT_NETWORK_TIERS=$tiers" >> $OUT/demo.txt
  GRIDJIT_NETWORK_TIERS=$tiers GRIDJIT_CACHE_DIR=/tmp/ex$tiers timeout 60 build/examples/fused_training --out-dir /tmp 2>&1 | grep -v "^step" >> $OUT/demo.txt
done
(cd build && timeout 100 ctest --output-on-failure -L example) > $OUT/ctest_example.txt 2>&1; echo "rc=$?" >> $OUT/ctest_example.txt
#!/bin/bash
# Session 38, call 3: Adam's 16-byte path for quads with skipped parameters: the GPU test of Adam
# against the host rule, the demo's step times (2^18 2-D) and one --bench round.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
(cd build && timeout 120 ctest --output-on-failure -R 'test_gpu_train_step|example_fused_training') > $OUT/ctest.txt 2>&1
echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/ex timeout 60 build/examples/fused_training --out-dir /tmp 2>&1 | grep -v "^step" > $OUT/demo.txt
echo "demo rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
GRIDJIT_CACHE_DIR=/tmp/ex timeout 100 build/examples/fused_training --bench > $OUT/bench.txt 2>&1
echo "bench rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
# call 4 (ncu of the demo's steps):
for p in module fused; do GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/exq timeout 70 ncu --csv --metrics gpu__time_duration.sum,launch__grid_size build/examples/fused_training --pipeline $p --steps 3 --out-dir /tmp > $OUT/ncu_$p.csv 2>&1; done
