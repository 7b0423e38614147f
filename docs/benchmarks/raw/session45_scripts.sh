## .gpu/s45/call1.sh
#!/bin/bash
# Session 45, call 1: the final code of session 44 (faeb4c6) on the card it gets.
# 1. cold compiles with the CPU otherwise idle: six runs of the 64 x 2 model's bench at 65,536
#    points, each with a fresh cache, the inference unit's NVRTC alone (a harness) between them;
# 2. tinycudann building in the background (12 jobs) while the C level runs beside tiny-cuda-nn's
#    JIT, two rounds: 64 x 2 fp16 and float outputs, an fp32 encoding with and without the small
#    levels' copy (GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1 / 0); 64 x 4 beside its fused and unfused;
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
echo "cores $(nproc) $(lscpu | grep 'Model name' | sed 's/  */ /g')" >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"$3},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
tag() { python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$1"; }
for r in 1 2 3 4 5 6; do
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) GRIDJIT_LOG_LEVEL=info timeout 60 build/gridjit bench \
      --config "$(model 64 2)" --dims 3 -P 65536 -i 5 --output fp16 --json 2>>$OUT/compile_log.txt ) | tag compile/r$r >> $OUT/compile.jsonl
  .gpu/bin/nvrtc_time .gpu/bin/inf_64x2.cu 1 | sed "s/^/harness r$r /" >> $OUT/harness.txt
done
log "compiles"
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=12 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
one() { label=$1; m=$2; o=$3; extra=$4; shift 4
  ( export CUDA_CACHE_DISABLE=1; env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 build/gridjit bench --config "$(model ${m%x*} ${m#*x} "$extra")" --dims 3 -i 30 --output $o --json 2>>$OUT/err.txt ) \
      | tag "$label" >> $OUT/ab.jsonl
}
F32=',"precision":"fp32"'
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  one 64x2/fp16/r$r 64x2 fp16 "" X=1
  one 64x2/fp32out/r$r 64x2 fp32 "" X=1
  one 64x2/encfp32/copy/r$r 64x2 fp16 "$F32" GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1
  one 64x2/encfp32/none/r$r 64x2 fp16 "$F32" X=1
  log "round $r"
done
CUDA_CACHE_PATH=$(mktemp -d) timeout 90 /tmp/btj --cache-dir $(mktemp -d) --hidden-layers 4 >> $OUT/tcnn_jit_64x4.jsonl 2>>$OUT/err.txt
one 64x4/fp16/r1 64x4 fp16 "" X=1
log "64x4"
python3 - $OUT/ab.jsonl $OUT/tcnn_jit.jsonl $OUT/tcnn_jit_64x4.jsonl $OUT/compile.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for f in sys.argv[2:4]:
    for l in open(f):
        d=json.loads(l); print(f.split("/")[-1], "jit", d["jit"]["inference_ms"], d["jit"]["train_step_ms"], "unfused", d.get("unfused",{}).get("train_step_ms"))
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","step","train_step") if k in p), "compile", round(d["compile_ms"]["inference"]))
for l in open(sys.argv[4]):
    d=json.loads(l); print(d["label"], {k: round(v) for k, v in d["compile_ms"].items()})
PY
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
log "tcnn built"
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
PYTHONPATH=$TP timeout $(( $(left) - 10 )) python3 python/benchmarks/compare_tcnn.py --workload model --repeat 2 --budget $(( $(left) - 25 )) --json $OUT/model_compare.json > $OUT/model_compare.txt 2>&1
log "compare rc=$?"
## .gpu/s45/call2.sh
#!/bin/bash
# Session 45, call 2: cold compiles, CPU idle: six runs of the 64 x 2 model's bench at 65,536 points
# (fresh cache each, GRIDJIT_LOG_LEVEL=info) alternating with the inference unit's NVRTC alone.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
for r in 1 2 3 4 5 6; do
  echo "== r$r" >> $OUT/compile_log.txt
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) GRIDJIT_LOG_LEVEL=info timeout 60 build/gridjit bench \
      --config "$M" --dims 3 -P 65536 -i 5 --output fp16 --json 2>>$OUT/compile_log.txt ) >> $OUT/compile.jsonl
  .gpu/bin/nvrtc_time .gpu/bin/inf_64x2.cu 2 | sed "s/^/harness r$r /" >> $OUT/harness.txt
done
python3 -c '
import json,sys
for l in open(sys.argv[1]): d=json.loads(l); print({k: round(v) for k, v in d["compile_ms"].items()})' $OUT/compile.jsonl >> $OUT/progress.txt
cat $OUT/harness.txt >> $OUT/progress.txt
grep "inference\|init" $OUT/compile_log.txt | head -30 >> $OUT/progress.txt
## .gpu/s45/profile_step.py
"""Session 45: where a PyTorch training step's time goes now (the model of compare_tcnn.py's
model workload: NetworkWithInputEncoding(3, 16, C1, FullyFusedMLP 64 x 2), torch Adam 1e-2,
loss (y.float() - target)^2 mean). argv: package (gridjit.torch | tinycudann), log2 points."""
import sys, json, statistics
import torch
pkg, log2 = sys.argv[1], int(sys.argv[2])
if pkg == "tinycudann":
    import tinycudann as tcnn
else:
    import gridjit.torch as tcnn
HASHGRID = {"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 2, "log2_hashmap_size": 19,
            "base_resolution": 16, "per_level_scale": 2.0}
NET = {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None", "n_neurons": 64, "n_hidden_layers": 2}
torch.manual_seed(0)
dev = torch.device("cuda")
model = tcnn.NetworkWithInputEncoding(3, 16, HASHGRID, NET).to(dev)
if pkg == "tinycudann":
    model.jit_fusion = tcnn.supports_jit_fusion()
opt = torch.optim.Adam(model.parameters(), 1e-2)
n = 1 << log2
x = torch.rand(n, 3, device=dev)
target = torch.rand(n, 16, device=dev)
def step():
    y = model(x)
    loss = (y.float() - target).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
for _ in range(20):
    step()
torch.cuda.synchronize()
times = []
for _ in range(30):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); step(); b.record(); b.synchronize(); times.append(a.elapsed_time(b))
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(20):
        step()
    torch.cuda.synchronize()
print(f"== {pkg} 2^{log2}: step median {statistics.median(times):.3f} ms (min {min(times):.3f})")
rows = []
for e in prof.key_averages():
    t = getattr(e, "device_time_total", None)
    if t is None:
        t = e.cuda_time_total
    if t and e.device_type.name == "CUDA":
        rows.append((t / 20 / 1000, e.count / 20, e.key))
rows.sort(reverse=True)
total = sum(r[0] for r in rows)
print(f"   kernels a step: {total:.3f} ms")
for t, c, k in rows[:25]:
    print(f"   {t:7.3f} ms  x{c:4.1f}  {k[:110]}")
## .gpu/s45/call3.sh
#!/bin/bash
# Session 45, call 3: where the PyTorch model step's time goes (torch profiler, kernels a step),
# gridjit.torch while tinycudann builds, then tinycudann (jit_fusion on).
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
mkdir -p /tmp/tcnn && tar -xzf .gpu/tiny-cuda-nn-6ee3546-src.tar.gz -C /tmp/tcnn
(cd /tmp/tcnn/tiny-cuda-nn/bindings/torch && CC=/usr/bin/gcc CXX=/usr/bin/g++ \
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=13 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch:$ROOT/python/src
for l in 21 18; do PYTHONPATH=$TP timeout 120 python3 .gpu/s45/profile_step.py gridjit.torch $l >> $OUT/profile.txt 2>>$OUT/err.txt; done
log "gridjit"
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
log "tcnn built"
for l in 21 18; do PYTHONPATH=$TP timeout 120 python3 .gpu/s45/profile_step.py tinycudann $l >> $OUT/profile.txt 2>>$OUT/err.txt; done
for l in 21; do PYTHONPATH=$TP timeout 120 python3 .gpu/s45/profile_step.py gridjit.torch $l >> $OUT/profile.txt 2>>$OUT/err.txt; done
log "done"
## .gpu/s45/call4.sh
#!/bin/bash
# Session 45, call 4: a model's backward fused or in two (GRIDJIT_NETWORK_FUSED_BACKWARD=0: the
# network's backward writing dL/d(features), then the encoding's level-major backward), and its
# inference and forward fused or in two passes, against the encoding's table size: fp16 tables of
# 2^19..2^22 entries a level, fp32 of 2^17..2^19; C1 + 64 x 2 -> 16, fp16 outputs, two rounds.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\",\"precision\":\"$1\",\"log2_hashmap_size\":$2},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":64,\"n_hidden_layers\":2,\"n_output_dims\":16}}"; }
tag() { python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$1"; }
one() { label=$1; p=$2; t=$3; shift 3
  ( export CUDA_CACHE_DISABLE=1; env "$@" GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 build/gridjit bench --config "$(model $p $t)" --dims 3 -i 30 --output fp16 --json 2>>$OUT/err.txt ) \
      | tag "$label" >> $OUT/tables.jsonl
}
APART="GRIDJIT_NETWORK_FUSED_BACKWARD=0 GRIDJIT_NETWORK_INFERENCE_FEATURES=1 GRIDJIT_NETWORK_FORWARD_FEATURES=1"
for pt in fp16:19 fp16:20 fp16:22 fp32:18 fp32:19 fp16:20/2 fp32:18/2 fp16:19/2; do
  p=${pt%%:*}; t=${pt#*:}; r=${t#*/}; t=${t%/*}; [ "$r" = "$t" ] && r=1
  one $p/$t/fused/r$r $p $t GRIDJIT_NETWORK_FUSED_BACKWARD=1
  one $p/$t/apart/r$r $p $t $APART
  log "$pt"
done
(cd build && GRIDJIT_NETWORK_FUSED_BACKWARD=0 timeout 200 ctest --output-on-failure -R '^test_gpu_network$') > $OUT/ctest_network_apart.txt 2>&1
log "test_gpu_network apart rc=$?"
python3 - $OUT/tables.jsonl >> $OUT/progress.txt <<'PY'
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); p=d["passes"]; print(d["label"], *(f'{k}={p[k]["median_ms"]:.4f}' for k in ("inference","forward","backward","backward_input","step","fused_step","train_step") if k in p))
PY
## .gpu/s45/call5.sh
#!/bin/bash
# Session 45, call 5: the rule on the final build: test_gpu_network and test_gpu_train_step (default rule);
# the 64 x 2 model's passes with C1's tables (2^19: fused by rule) and 2^20 (apart by rule).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\",\"log2_hashmap_size\":$1},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":64,\"n_hidden_layers\":2,\"n_output_dims\":16}}"; }
for t in 19 20; do
  ( export CUDA_CACHE_DISABLE=1; GRIDJIT_CACHE_DIR=$(mktemp -d) GRIDJIT_LOG_LEVEL=info timeout 60 build/gridjit bench --config "$(model $t)" --dims 3 -i 30 --output fp16 --json 2>$OUT/log_$t.txt ) \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], {k: round(v["median_ms"],4) for k,v in d["passes"].items()})' "rule/fp16/$t" >> $OUT/progress.txt
  grep -c "gj_network_backward.cu" $OUT/log_$t.txt | sed "s/^/fused backward program compiled (log2 $t): /" >> $OUT/progress.txt
done
log "bench"
(cd build && timeout 120 ctest --output-on-failure -j2 -R '^test_gpu_network$|^test_gpu_train_step$') > $OUT/ctest_gpu.txt 2>&1
log "ctest gpu_network, gpu_train_step rc=$?"
tail -4 $OUT/ctest_gpu.txt >> $OUT/progress.txt
## /tmp/nvrtc_time.c (the inference unit's NVRTC alone; .gpu/bin/nvrtc_time, built here with gcc -O2 ... -lnvrtc)
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int argc,char**argv){
  FILE*f=fopen(argv[1],"rb");fseek(f,0,2);long n=ftell(f);fseek(f,0,0);char*s=malloc(n+1);fread(s,1,n,f);s[n]=0;fclose(f);
  const char*opts[8]={"--gpu-architecture=sm_90","-std=c++17","--fmad=true","--device-as-default-execution-space","-DGJ_CUBIN_TARGET","--extra-device-vectorization"};
  int reps=argc>2?atoi(argv[2]):3; int nopt=6; const char* extra=getenv("XOPT"); if(getenv("NOVEC")) nopt=5; if(extra) opts[nopt++]=extra;
  for(int r=0;r<reps;r++){
    nvrtcProgram p;nvrtcCreateProgram(&p,s,"x.cu",0,0,0);
    double t=now();nvrtcResult e=nvrtcCompileProgram(p,nopt,opts);double dt=now()-t;
    if(e){size_t l;nvrtcGetProgramLogSize(p,&l);char*lg=malloc(l);nvrtcGetProgramLog(p,lg);fprintf(stderr,"%s\n",lg);return 1;}
    size_t cs;nvrtcGetCUBINSize(p,&cs);
    printf("%.0f ms cubin %zu\n",dt,cs);nvrtcDestroyProgram(&p);}
}
