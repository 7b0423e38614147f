## .gpu/s46/call1.sh
#!/bin/bash
# Session 46, call 1: the forty-fifth session's final code (d814b21) with its rules as defaults:
# 1. the 64 x 2 model at 2^19 and 2^20 table entries (fp16), fp32 2^18: backward fused where the
#    gradients fit 3/4 of L2, apart where not; inference two passes past 40 MiB (info log says);
#    on an H200 first the 64 x 2 model beside tiny-cuda-nn's JIT, two rounds;
# 2. the whole suite: ctest -L gpu beside ctest -LE gpu, then pytest in the time left.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
G=$ROOT/build/gridjit; t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\",\"log2_hashmap_size\":$1$2},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":64,\"n_hidden_layers\":2,\"n_output_dims\":16}}"; }
tag() { python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$1"; }
one() { echo "== $1" >> $OUT/bench_log.txt; ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) GRIDJIT_LOG_LEVEL=info timeout 40 $G bench --config "$(model $2 "$3")" --dims 3 -i 30 --output fp16 --json 2>>$OUT/bench_log.txt ) | tag "$1" >> $OUT/rules.jsonl; }
if grep -q H200 $OUT/progress.txt; then
  xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
fi
for r in 1 2; do
  [ -x /tmp/btj ] && CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one fp16/2^19/r$r 19 ""
  one fp16/2^20/r$r 20 ""
  [ $r = 1 ] && one fp32/2^18/r$r 18 ',"precision":"fp32"'
done
log "rules"
python3 - $OUT/rules.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in p), {k: round(v) for k, v in d["compile_ms"].items()})
PY
grep -o "compiled [a-z_.0-9]* (&[a-z_]*)" $OUT/bench_log.txt | sort | uniq -c >> $OUT/progress.txt
rm -rf build/tests/tmp
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( 585 - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
## .gpu/s46/call2.sh
#!/bin/bash
# Session 46, call 2: issue 18's targets on the card it gets, the final rules as defaults:
# 1. cold compiles, CPU otherwise idle: four runs of the 64 x 2 model's bench at 65,536 points,
#    each with a fresh cache and CUDA_CACHE_DISABLE=1 (compile_ms: inference, training);
# 2. tinycudann building in the background while the C level runs beside tiny-cuda-nn's JIT, two
#    rounds: 64 x 2 fp16 outputs; then 64 x 4 beside its fused and unfused step;
# 3. the model workload through PyTorch beside tinycudann, two runs.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
left() { echo $(( ${LIMIT:-590} - (SECONDS - t0) )); }
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
tag() { python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$1"; }
for r in 1 2 3 4; do
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) GRIDJIT_LOG_LEVEL=info timeout 60 build/gridjit bench \
      --config "$(model 64 2)" --dims 3 -P 65536 -i 5 --output fp16 --json 2>>$OUT/compile_log.txt ) | tag compile/r$r >> $OUT/compile.jsonl
done
log "compiles"
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=12 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
one() { label=$1; m=$2; shift 2
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 build/gridjit bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --output fp16 --json 2>>$OUT/err.txt ) \
      | tag "$label" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2/fp16/r$r 64x2
  log "round $r"
done
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
one 64x4/fp16/r1 64x4
log "64x4"
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl $OUT/tcnn_jit_64x4.jsonl $OUT/compile.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for f in sys.argv[2:4]:
    for l in open(f):
        d=json.loads(l); print(f.split("/")[-1], "jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"], "unfused", d.get("unfused",{}).get("train_step_ms"))
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","backward","step","train_step") if k in p))
for l in open(sys.argv[4]):
    d=json.loads(l); print(d["label"], {k: round(v) for k, v in d["compile_ms"].items()})
PY
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
log "tcnn built"
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
PYTHONPATH=$TP timeout $(( $(left) - 10 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 25 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
log "compare rc=$?"
## .gpu/s46/call3.sh
#!/bin/bash
# Session 46, call 3: the model's fused training step against its passes (forward for training,
# then the backward to the parameters) across shapes: gridjit bench's fused_step and step, two
# rounds, C1 + W x L -> 16, 2^21 points, fp16 outputs.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
for r in 1; do for s in 64x2 64x4 32x2 16x2 128x2 64x3 64x1; do
  w=${s%x*}; l=${s#*x}
  GRIDJIT_CACHE_DIR=/tmp/gjc_$s timeout 60 build/gridjit bench --config "$(model $w $l)" --dims 3 -i 30 --output fp16 \
     --json 2>>$OUT/err.txt \
   | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], {k: round(v["median_ms"],4) for k,v in d["passes"].items()})' "$s/r$r" >> $OUT/progress.txt
done; done
## .gpu/s46/call4.sh (written for the step as passes; not run: no device time was left)
#!/bin/bash
# Session 46, call 4: a model's training step as its passes (the forward for training, the loss
# pass, the fused backward) by the rule, against the step's own program (GRIDJIT_NETWORK_STEP_PASSES=0),
# beside tiny-cuda-nn's JIT (64 x 2) and unfused (64 x 4) steps; test_gpu_train_step and
# test_gpu_network; compute-sanitizer on the 64 x 4 step as passes (its forward in two passes).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
one() { label=$1; s=$2; knob=$3
  env GRIDJIT_NETWORK_STEP_PASSES=$knob GRIDJIT_CACHE_DIR=/tmp/gjc_${s}_$knob timeout 60 build/gridjit bench --config "$(model ${s%x*} ${s#*x})" --dims 3 -i 30 --output fp16 --json 2>>$OUT/err.txt \
   | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], {k: round(v["median_ms"],4) for k,v in d["passes"].items()})' "$label" >> $OUT/progress.txt
}
CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
for s in 64x2 64x4; do one $s/rule $s x; one $s/own $s 0; done
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
log "bench"
python3 - $OUT/tcnn_jit.jsonl $OUT/tcnn_jit_64x4.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for f in sys.argv[1:]:
    for l in open(f):
        d=json.loads(l); print(f.split("/")[-1], "jit", round(d["jit"]["inference_ms"],4), round(d["jit"]["train_step_ms"],4), "unfused", d.get("unfused",{}).get("train_step_ms"))
PY
rm -rf build/tests/tmp
(cd build && timeout 95 ctest --output-on-failure -R 'test_gpu_train_step' > $OUT/ctest_gpu.txt 2>&1; echo "ctest gpu_train_step rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
cp build/Testing/Temporary/LastTest.log $OUT/ 2>/dev/null; grep -h "PASS\|FAIL" $OUT/LastTest.log | grep -i "STEP_PASSES\|FAIL" | cut -c1-220 | head -30 > $OUT/step_lines.txt
