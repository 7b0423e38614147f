## .gpu/s42/call1.sh (15141ed)
#!/bin/bash
# Session 42, call 1: test_gpu_network (never passed since the fp32 staging mend), then the defaults
# against the knobs (fetch, two passes for inference and for the forward), beside tiny-cuda-nn's JIT,
# two rounds interleaved; then the GPU label in the time left.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
G=$PWD/build/gridjit; t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
(cd build && timeout 200 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network.txt 2>&1
log "test_gpu_network rc=$?"
(cd build && GRIDJIT_NETWORK_FORWARD_FEATURES=1 GRIDJIT_NETWORK_FEATURES_FETCH=1 timeout 200 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network_knobs.txt 2>&1
log "test_gpu_network knobs on rc=$?"
export CUDA_CACHE_DISABLE=1
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
# variant: INFERENCE_FEATURES/FETCH/FORWARD_FEATURES (x: unset, the rule)
one() { m=$1; v=$2; r=$3; IFS=/ read -r i f t <<< "$v"
  ( [ $i != x ] && export GRIDJIT_NETWORK_INFERENCE_FEATURES=$i; [ $f != x ] && export GRIDJIT_NETWORK_FEATURES_FETCH=$f
    [ $t != x ] && export GRIDJIT_NETWORK_FORWARD_FEATURES=$t
    GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/$v/r$r" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2 x/x/x $r; one 64x2 1/x/1 $r; one 64x2 0/x/0 $r; one 64x2 1/0/1 $r
  one 64x4 x/x/x $r; one 64x4 x/x/1 $r; one 128x2 x/x/x $r; one 128x2 1/x/1 $r; one 32x2 x/x/x $r; one 32x2 1/x/1 $r
  log "round $r"
done
left=$(( 580 - (SECONDS - t0) ))
[ $left -gt 60 ] && (cd build && timeout $left ctest --output-on-failure -j2 -L gpu -E '^test_gpu_network$' > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$?" >> $OUT/progress.txt)
log done

## .gpu/s42/call2_suite.sh (15141ed; SKIP_GPU=. TOTAL=420: the GPU label had run in call 1)
#!/bin/bash
# Session 42, call 2: the whole suite on HEAD: ctest -L gpu (two at a time) beside ctest -LE gpu,
# then the Python lane (torch GPU tests included) in the time left.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu ${SKIP_GPU:+-E "$SKIP_GPU"} > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( ${TOTAL:-590} - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"

## .gpu/s42/call3.sh: never ran (every start refused); call4.sh took its place

## .gpu/s42/call4.sh (ac6010d)
#!/bin/bash
# Session 42, call 4: test_gpu_network on the rule (0d2362f); the model rules against the knobs and
# fp32 features' fetch beside tiny-cuda-nn's JIT, two rounds interleaved.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
G=$PWD/build/gridjit; t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
(cd build && timeout 100 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest.txt 2>&1
log "test_gpu_network rc=$?"
export CUDA_CACHE_DISABLE=1
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\",\"precision\":\"$3\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
one() { m=$1; v=$2; r=$3; IFS=/ read -r i f t <<< "$v"; p=fp16; mm=${m%f}; [ $mm != $m ] && p=fp32
  ( [ $i != x ] && export GRIDJIT_NETWORK_INFERENCE_FEATURES=$i; [ $f != x ] && export GRIDJIT_NETWORK_FEATURES_FETCH=$f
    [ $t != x ] && export GRIDJIT_NETWORK_FORWARD_FEATURES=$t
    GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $G bench --config "$(model ${mm%x*} ${mm#*x} $p)" --dims 3 -i 30 --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/$v/r$r" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2 x/x/x $r; one 64x2 1/x/1 $r; one 64x4 x/x/x $r; one 64x4 x/x/0 $r
  one 64x4f x/x/x $r; one 64x4f x/1/x $r; one 64x2f 1/0/1 $r; one 64x2f 1/1/1 $r
  log "round $r"
done

## .gpu/s42/call5.sh (3ee73ee; TOTAL=260)
#!/bin/bash
# Session 42, call 5: the GPU label and the torch GPU tests on HEAD (the forward in two passes by its rule).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
(cd build && timeout 170 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( ${TOTAL:-270} - (SECONDS - t0) )) python3 -m pytest python/tests/test_torch_network_gpu.py python/tests/test_torch_train_gpu.py python/tests/test_tcnn_scripts.py -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
