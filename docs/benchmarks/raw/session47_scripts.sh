# ==== .gpu/s47/callA.sh
#!/bin/bash
# Session 47, call A: (1) a model's training step as its passes against the step's own program
# (GRIDJIT_NETWORK_STEP_PASSES=0) for 64x2/64x3/64x4 beside tiny-cuda-nn's JIT (64x2, 64x4);
# (2) the whole suite (ctest -L gpu beside ctest -LE gpu, then pytest) with compute-sanitizer on
# the 64x4 step as passes beside it.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
one() { label=$1; s=$2; knob=$3
  env GRIDJIT_NETWORK_STEP_PASSES=$knob GRIDJIT_CACHE_DIR=/tmp/gjc_${s}_$knob timeout 60 build/gridjit bench --config "$(model ${s%x*} ${s#*x})" --dims 3 -i 30 --output fp16 --json 2>>$OUT/err.txt \
   | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/steps.jsonl
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  for s in 64x2 64x4; do one $s/rule/r$r $s x; one $s/own/r$r $s 0; done
  [ $r = 1 ] && { one 64x3/rule/r1 64x3 x; one 64x3/own/r1 64x3 0; }
done
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
log "bench"
python3 - $OUT/steps.jsonl $OUT/tcnn_jit.jsonl $OUT/tcnn_jit_64x4.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for f in sys.argv[2:]:
    for l in open(f):
        d=json.loads(l); print(f.split("/")[-1], "jit", round(d["jit"]["inference_ms"],4), round(d["jit"]["train_step_ms"],4), "unfused", d.get("unfused",{}).get("train_step_ms"))
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in p))
PY
rm -rf build/tests/tmp
(GRIDJIT_CACHE_DIR=/tmp/gjc_san GRIDJIT_NETWORK_STEP_PASSES=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 build/gridjit bench --config "$(model 64 4)" --dims 3 -P 65536 -i 2 --output fp16 > $OUT/sanitizer_64x4.txt 2>&1; echo "sanitizer 64x4 rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
cp build/Testing/Temporary/LastTest.log $OUT/ 2>/dev/null
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( 585 - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
# ==== .gpu/s47/callB.sh
#!/bin/bash
# Session 47, call B: fp16 dL/doutput in the backward kernels (bench --output fp16 now hands the
# backward fp16 dL/dy) and the step as passes with fp16 dL/dy and the 8-wide loss pass:
# 64x2/64x3/64x4 passes (knob 1) against the step's program (knob 0) beside tiny-cuda-nn's JIT,
# two rounds; then the whole suite (ctest -L gpu beside -LE gpu, then pytest).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
one() { label=$1; s=$2; knob=$3; o=${4:-fp16}
  env GRIDJIT_NETWORK_STEP_PASSES=$knob GRIDJIT_CACHE_DIR=/tmp/gjc_${s}_$knob timeout 60 build/gridjit bench --config "$(model ${s%x*} ${s#*x})" --dims 3 -i 30 --output $o --json 2>>$OUT/err.txt \
   | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/steps.jsonl
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  for s in 64x2 64x3 64x4; do one $s/passes/r$r $s 1; one $s/own/r$r $s 0; done
done
one 64x2/fp32out/r1 64x2 x fp32
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
log "bench"
python3 - $OUT/steps.jsonl $OUT/tcnn_jit.jsonl $OUT/tcnn_jit_64x4.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for f in sys.argv[2:]:
    for l in open(f):
        d=json.loads(l); print(f.split("/")[-1], "jit", round(d["jit"]["inference_ms"],4), round(d["jit"]["train_step_ms"],4), "unfused", d.get("unfused",{}).get("train_step_ms"))
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in p))
PY
rm -rf build/tests/tmp
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( 588 - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
# ==== .gpu/s47/callC.sh
#!/bin/bash
# Session 47, call C: the rule (64 x 2's step as passes) beside tiny-cuda-nn's JIT; the tests that
# failed in call B (launch path: tiers raced on 16 CPUs; the torch fp16-dy test) and the GPU step
# and network tests under the new rule.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
rm -rf build/tests/tmp
(cd build && timeout 200 ctest --output-on-failure -j3 -R "test_network_launch_path|test_gpu_train_step|test_gpu_network" > $OUT/ctest.txt 2>&1; echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout 150 python3 -m pytest python/tests/test_torch_network_gpu.py -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
wait
CUDA_CACHE_PATH=$(mktemp -d) timeout 40 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
GRIDJIT_CACHE_DIR=/tmp/gjc_r timeout 30 build/gridjit bench --config "$M" --dims 3 -i 30 --output fp16 --json > $OUT/rule.json 2>>$OUT/err.txt
python3 - $OUT/rule.json $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); print("64x2 rule", {k: round(v["median_ms"],4) for k,v in d["passes"].items()})
for l in open(sys.argv[2]):
    t=json.loads(l); print("jit", round(t["jit"]["inference_ms"],4), round(t["jit"]["train_step_ms"],4))
PY
log "bench"
# ==== .gpu/s47/callD.sh
#!/bin/bash
# Session 47, call D (short): the torch fp16-dy test as fixed, and test_gpu_train_step under the
# new rule (64 x 2's step as passes by default).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
rm -rf build/tests/tmp
(cd build && timeout 100 ctest --output-on-failure -R "test_gpu_train_step" > $OUT/ctest.txt 2>&1; echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout 95 python3 -m pytest python/tests/test_torch_network_gpu.py -q -rs -p no:cacheprovider -k "fp16_output or adam or cuda_graph" > $OUT/pytest.txt 2>&1
echo "pytest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
wait
tail -3 $OUT/pytest.txt >> $OUT/progress.txt; grep "tests passed\|Failed" $OUT/ctest.txt >> $OUT/progress.txt
# ==== .gpu/s48/call1.sh
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
