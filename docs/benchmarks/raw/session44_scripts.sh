## .gpu/s44/call1.sh
#!/bin/bash
# Session 44, call 1: GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1 against the rule (off) and the two passes,
# beside tiny-cuda-nn's JIT (two rounds, interleaved); then test_gpu_network.
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
for r in 1 2; do
  CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2/staged/fp16/r$r 64x2 fp16 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1
  one 64x2/plain/fp16/r$r 64x2 fp16 X=1
  one 64x2/twopass/fp16/r$r 64x2 fp16 GRIDJIT_NETWORK_INFERENCE_FEATURES=1
  one 32x2/staged/fp16/r$r 32x2 fp16 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1
  one 32x2/plain/fp16/r$r 32x2 fp16 X=1
  one 64x4/staged/fp16/r$r 64x4 fp16 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1
  one 64x4/plain/fp16/r$r 64x4 fp16 X=1
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p), "compile", round(d["compile_ms"]["inference"]))
PY
(cd build && timeout 150 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network.txt 2>&1
log "test_gpu_network rc=$?"
## .gpu/s44/call2.sh
#!/bin/bash
# Session 44, call 2: ctest -L gpu on the staged rule (b4ec2d4) while tinycudann builds with its
# networks; 4 hidden layers beside tiny-cuda-nn's JIT (fused and unfused); then the model workload
# beside tinycudann through PyTorch (two rounds).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
left() { echo $(( ${LIMIT:-585} - (SECONDS - t0) )); }
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=13 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
(cd build && timeout 240 ctest --output-on-failure -j2 -L gpu) > $OUT/ctest_gpu.txt 2>&1
log "gpu label rc=$?"
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
log "tcnn 64x4"
CUDA_CACHE_DISABLE=1 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 build/gridjit bench --config "$(model 64 4)" --dims 3 -i 30 --output fp16 --json >> $OUT/gj_64x4.jsonl 2>>$OUT/err.txt
log "gj 64x4"
wait $bpid; tail -2 /tmp/tcnn.log >> $OUT/progress.txt
log "tcnn built"
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
PYTHONPATH=$TP timeout $(( $(left) - 10 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 25 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
log "compare rc=$?"
## .gpu/s44/call3.sh
#!/bin/bash
# Session 44, call 3: the output stores' forms (compile time against kernel time): build/gridjit
# (HEAD: floats, 16-byte pieces, words, singles), gridjit_A (one loop, a uniform branch per value),
# gridjit_B (16-byte pieces for fp16, else A's loop); fp16 and float outputs; beside tcnn's JIT.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
for v in A B; do xz -dc .gpu/bin/gridjit_$v.xz > .gpu/bin/gridjit_$v && chmod +x .gpu/bin/gridjit_$v; done
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
one() { label=$1; bin=$2; m=$3; o=$4; shift 4
  ( export CUDA_CACHE_DISABLE=1; env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $bin bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --output $o --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  for o in fp16 fp32; do
    one head/64x2/$o/r$r build/gridjit 64x2 $o X=1
    one A/64x2/$o/r$r .gpu/bin/gridjit_A 64x2 $o X=1
    one B/64x2/$o/r$r .gpu/bin/gridjit_B 64x2 $o X=1
  done
  one head/32x2/fp16/r$r build/gridjit 32x2 fp16 X=1
  one A/32x2/fp16/r$r .gpu/bin/gridjit_A 32x2 fp16 X=1
  one B/32x2/fp16/r$r .gpu/bin/gridjit_B 32x2 fp16 X=1
  one head-nostage/64x2/fp32/r$r build/gridjit 64x2 fp32 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=0
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p), "compile", round(d["compile_ms"]["inference"]), round(d["compile_ms"]["training"]))
PY
## .gpu/s44/call4.sh
#!/bin/bash
# Session 44, call 4: the staged small levels through the level loop's one instance (gridjit_C: a
# generic pointer for the small levels' index mode) against build/gridjit (A: the stores in one
# loop; the staged levels a second instance of the level code), and A without the copy.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
xz -dc .gpu/bin/gridjit_C.xz > /tmp/gridjit_C && chmod +x /tmp/gridjit_C
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
one() { label=$1; bin=$2; m=$3; o=$4; shift 4
  ( export CUDA_CACHE_DISABLE=1; env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $bin bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --output $o --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" >> $OUT/ab.jsonl
}
for r in 1 2; do
  CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  for m in 64x2 32x2; do
    one A/$m/fp16/r$r build/gridjit $m fp16 X=1
    one C/$m/fp16/r$r /tmp/gridjit_C $m fp16 X=1
    one A-nostage/$m/fp16/r$r build/gridjit $m fp16 GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=0
  done
  one A/64x2/fp32/r$r build/gridjit 64x2 fp32 X=1
  one C/64x2/fp32/r$r /tmp/gridjit_C 64x2 fp32 X=1
  log "round $r"
done
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[2]): d=json.loads(l); print("tcnn jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"])
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p), "compile", round(d["compile_ms"]["inference"]), round(d["compile_ms"]["training"]))
PY
(cd build && timeout 150 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network.txt 2>&1
log "test_gpu_network rc=$?"
## .gpu/s44/call5.sh
#!/bin/bash
# Session 44, call 5: the whole suite on the final code (ctest -L gpu beside ctest -LE gpu, then the
# Python lane in the time left); on an H200 first the 64 x 2 model beside tiny-cuda-nn's JIT.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
G=$ROOT/build/gridjit; t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
if grep -q H200 $OUT/progress.txt; then
  xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
  CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  for o in fp16 fp32; do CUDA_CACHE_DISABLE=1 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $G bench --config "$M" --dims 3 -i 30 --output $o --json >> $OUT/gj.jsonl 2>>$OUT/err.txt; done
  log "bench"
fi
(cd build && timeout 330 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 330 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( ${TOTAL:-570} - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"
## .gpu/s44/call6.sh (run with LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib exported)
#!/bin/bash
# Session 44, call 6: the SASS of the 64 x 2 model's kernels as the rule generates them (is the
# level loop unrolled by ptxas? local memory?), for the next session to read.
set -u
export PATH=$PATH:/usr/local/cuda/bin
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
build/gridjit dump --config "$M" --dims 3 > /tmp/m.cu
nvcc -cubin -arch=sm_90 -std=c++17 -DGJ_CUBIN_TARGET -Xptxas -v /tmp/m.cu -o /tmp/m.cubin > $OUT/ptxas.txt 2>&1
build/gridjit dump --config '{"otype":"HashGrid"}' --dims 3 --pass forward > /tmp/e.cu
nvcc -cubin -arch=sm_90 -std=c++17 -DGJ_CUBIN_TARGET -Xptxas -v /tmp/e.cu -o /tmp/e.cubin >> $OUT/ptxas.txt 2>&1
for c in m e; do cuobjdump -sass /tmp/$c.cubin > $OUT/sass_$c.txt 2>&1; done
python3 - $OUT/sass_m.txt $OUT/sass_e.txt > $OUT/summary.txt <<'PY'
import re,sys,collections
for f in sys.argv[1:]:
    fn=None; c=collections.defaultdict(collections.Counter)
    for l in open(f):
        m=re.search(r"Function : (\S+)",l)
        if m: fn=m.group(1); continue
        m=re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?",l)
        if m and fn: c[fn][m.group(2)]+=1; c[fn]["_total"]+=1
    for fn,k in c.items():
        print(f, fn, "total", k["_total"], {x:k[x] for x in ("LDG","LDL","STL","LDS","STS","LD","ST","HMMA","LDSM","BRA","RED","ATOMG","STG") if k[x]})
PY
ls -la $OUT; for f in $OUT/sass_*.txt; do xz -9 $f; done
