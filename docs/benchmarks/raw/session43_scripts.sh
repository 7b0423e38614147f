## .gpu/s43/call1.sh (b1cc759)
#!/bin/bash
# Session 43, call 1: on an H200, 64x2 fused vs two passes + fetch beside tiny-cuda-nn's JIT (two rounds);
# then the whole suite: ctest -L gpu beside ctest -LE gpu, then the Python lane in the time left.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
G=$ROOT/build/gridjit; t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
one() { m=$1; v=$2; r=$3; IFS=/ read -r i f t <<< "$v"
  ( export CUDA_CACHE_DISABLE=1; [ $i != x ] && export GRIDJIT_NETWORK_INFERENCE_FEATURES=$i; [ $f != x ] && export GRIDJIT_NETWORK_FEATURES_FETCH=$f
    [ $t != x ] && export GRIDJIT_NETWORK_FORWARD_FEATURES=$t
    GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/$v/r$r" >> $OUT/ab.jsonl
}
if grep -q H200 $OUT/progress.txt || [ -n "${FORCE_AB:-}" ]; then
  xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
  for r in 1 2; do
    CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
    one 64x2 x/x/x $r; one 64x2 1/1/x $r; one 64x2 1/0/x $r; one 32x2 x/x/x $r; one 32x2 1/1/x $r
    log "round $r"
  done
fi
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( ${TOTAL:-585} - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"

## .gpu/s43/call2.sh (experiment builds: .gpu/var/gridjit-w = b1cc759 with GJX_WIDE_WARPS read by the plan, gridjit-wh = that and fp16 stores in gj_nn_store_rows)
#!/bin/bash
# Session 43, call 2: experiment builds (not committed): the wide inference block at 20/24 warps
# (GJX_WIDE_WARPS, gridjit-w) and fp16 outputs (gridjit-wh), beside tiny-cuda-nn's JIT, two rounds.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
export CUDA_CACHE_DISABLE=1
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
one() { label=$1; bin=$2; shift 2
  ( env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $bin bench --config "$M" --dims 3 -i 30 --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/ab.jsonl
}
B=build/gridjit; W=.gpu/var/gridjit-w; H=.gpu/var/gridjit-wh
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one base/r$r $B X=1
  one w20/r$r $W GJX_WIDE_WARPS=20
  one w24/r$r $W GJX_WIDE_WARPS=24
  one h16/r$r $H X=1
  one h20/r$r $H GJX_WIDE_WARPS=20
  one base2f/r$r $B GRIDJIT_NETWORK_INFERENCE_FEATURES=1
  one h2f/r$r $H GRIDJIT_NETWORK_INFERENCE_FEATURES=1
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p))
PY

## .gpu/s43/call3.sh (this session's fp16 outputs)
#!/bin/bash
# Session 43, call 3: fp16 outputs (gj_network_pass_desc.output_fp16, bench --output fp16):
# test_gpu_network, then the 64x2 model's inference and forward into fp32 and fp16 outputs (fused
# and two passes) beside tiny-cuda-nn's JIT, two rounds; then the GPU label in the time left.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
(cd build && timeout 200 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network.txt 2>&1
log "test_gpu_network rc=$?"
export CUDA_CACHE_DISABLE=1
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
one() { label=$1; m=$2; o=$3; shift 3
  ( env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 build/gridjit bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --output $o --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2/fp32/r$r 64x2 fp32 X=1
  one 64x2/fp16/r$r 64x2 fp16 X=1
  one 64x2/two/fp32/r$r 64x2 fp32 GRIDJIT_NETWORK_INFERENCE_FEATURES=1
  one 64x2/two/fp16/r$r 64x2 fp16 GRIDJIT_NETWORK_INFERENCE_FEATURES=1
  one 64x4/fp32/r$r 64x4 fp32 X=1
  one 64x4/fp16/r$r 64x4 fp16 X=1
  one 32x2/fp16/r$r 32x2 fp16 X=1
  one 128x2/fp16/r$r 128x2 fp16 X=1
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], d.get("output"), *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p))
PY
left=$(( 560 - (SECONDS - t0) ))
[ $left -gt 60 ] && (cd build && timeout $left ctest --output-on-failure -j2 -L gpu -E '^test_gpu_network$' > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
log done

## .gpu/s43/call4.sh (float outputs stored four to a lane, not kept)
#!/bin/bash
# Session 43, call 4: float outputs stored four values a lane (HEAD's working tree) against the
# scalar stores (gridjit-w: b1cc759's kernels), fp16 outputs beside them, tiny-cuda-nn's JIT; then
# test_gpu_network, the examples, the torch GPU tests in the time left.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
one() { label=$1; bin=$2; shift 2
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $bin bench --config "$M" --dims 3 -i 30 "$@" --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one scalar_fp32/r$r .gpu/var/gridjit-w
  one quad_fp32/r$r build/gridjit --output fp32
  one fp16/r$r build/gridjit --output fp16
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], d.get("output"), *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p))
PY
(cd build && timeout 150 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network.txt 2>&1
log "test_gpu_network rc=$?"
(cd build && timeout 60 ctest --output-on-failure -L example) > $OUT/ctest_examples.txt 2>&1
log "examples rc=$?"
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( ${TOTAL:-480} - (SECONDS - t0) )) python3 -m pytest python/tests/test_torch_network_gpu.py python/tests/test_torch_train_gpu.py python/tests/test_tcnn_scripts.py python/tests/test_capi.py -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"

## .gpu/s43/call5.sh (the final code's examples)
#!/bin/bash
# Session 43, call 5: the examples on the final code (the module pipeline's fp16 outputs), and
# fused_inference --bench (the module into fp16 outputs beside the hand-fused kernel), twice.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
(cd build && timeout 90 ctest --output-on-failure -L example) > $OUT/ctest_examples.txt 2>&1
log "examples rc=$?"
for r in 1 2; do CUDA_CACHE_DISABLE=1 timeout 60 build/examples/fused_inference --bench >> $OUT/fused_inference_bench.txt 2>&1; log "bench $r rc=$?"; done

## .gpu/s43/call6.sh (written for GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1; never ran: no device time left)
#!/bin/bash
# Session 43, call 6: the wide inference block gathering its encoding's small levels from shared
# memory (GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1) against the rule (off), beside tiny-cuda-nn's JIT; then
# test_gpu_network (the models' outputs against the CPU reference, fused = two passes bit for bit).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
one() { label=$1; m=$2; o=$3; shift 3
  ( export CUDA_CACHE_DISABLE=1; env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 build/gridjit bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --output $o --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/ab.jsonl
}
CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
for r in 1 2; do
  one 64x2/staged/fp16/r$r 64x2 fp16 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1
  one 64x2/plain/fp16/r$r 64x2 fp16 X=1
  one 32x2/staged/fp16/r$r 32x2 fp16 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1
  one 32x2/plain/fp16/r$r 32x2 fp16 X=1
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p), "compile", round(d["compile_ms"]["inference"]))
PY
(cd build && timeout 120 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network.txt 2>&1
log "test_gpu_network rc=$?"
