## .gpu/s39/call1.sh
#!/bin/bash
# Session 39, call 1 (an H200 if one comes): fused_training --bench twice (module, hand-written,
# two-kernel inference), tiny-cuda-nn's JIT model twice, gridjit bench of the 64x2 model twice;
# then C1-C3 forwards beside bench_tcnn: SoA/AoS uniform, rays (issue 17's open items).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib CUDA_CACHE_DISABLE=1
G=$PWD/build/gridjit; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
xz -dc .gpu/bin/bench_tcnn.xz > /tmp/bt && chmod +x /tmp/bt
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
J=$OUT/kernels.jsonl
record() { label=$1; shift; "$@" 2>>$OUT/err.txt | python3 -c 'import json, sys; d = json.load(sys.stdin); d["label"] = sys.argv[1]; print(json.dumps(d))' "$label" >> "$J"; }
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/m $G bench --config "$M" --dims 3 -i 30 --json >> $OUT/model.jsonl 2>>$OUT/err.txt
  echo "== bench round $r" >> $OUT/example.txt
  GRIDJIT_CACHE_DIR=/tmp/ex timeout 100 build/examples/fused_training --bench >> $OUT/example.txt 2>&1
  echo "round $r $((SECONDS-t0)) s" >> $OUT/progress.txt
done
for r in 1 2; do
  for c in C1:3 C2:2 C3:3; do n=${c%%:*}; d=${c##*:}; cfg=$C1; [ $n = C3 ] && cfg=$C3
    record tcnn/$n/r$r /tmp/bt $n --json
    for l in soa aos; do
      record gj/$n/$l/r$r $G bench -c "$cfg" -d $d -l $l -p forward,forward_dydx -i 30 --calls 0 -j
      record rays/$n/$l/r$r $G bench -c "$cfg" -d $d -l $l -p forward,forward_dydx,backward,step -i 30 --calls 0 --input rays -j
    done
  done
  echo "kernels round $r $((SECONDS-t0)) s" >> $OUT/progress.txt
done
## .gpu/s39/call2.sh
#!/bin/bash
# Session 39, call 2: a model's inference in two passes (GRIDJIT_NETWORK_INFERENCE_FEATURES 1, the new
# default) against the fused kernel (0), alternating, several models; the example's check of the
# module's outputs against the hand-fused kernel; tiny-cuda-nn's JIT beside.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib CUDA_CACHE_DISABLE=1
G=$PWD/build/gridjit; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
J=$OUT/ab.jsonl
CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
for r in 1 2; do
  for m in 64x2 64x4 32x2 128x2 16x2; do for v in 1 0; do
    GRIDJIT_NETWORK_INFERENCE_FEATURES=$v GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=$(mktemp -d) $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/if$v/r$r" >> $J
  done; done
  for v in 1 0; do for P in 262144 65536; do
    GRIDJIT_NETWORK_INFERENCE_FEATURES=$v GRIDJIT_CACHE_DIR=/tmp/c$v $G bench --config "$(model 64 2)" --dims 3 -P $P -i 30 --json 2>>$OUT/err.txt \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "64x2/P$P/if$v/r$r" >> $J
  done; done
  echo "ab round $r $((SECONDS-t0)) s" >> $OUT/progress.txt
done
GRIDJIT_CACHE_DIR=/tmp/ex timeout 100 build/examples/fused_training --bench > $OUT/example.txt 2>&1
echo "example rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
(cd build && timeout 150 ctest --output-on-failure -R 'test_gpu_network$|example_fused_inference') > $OUT/ctest.txt 2>&1
echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt
## .gpu/s39/call3.sh
#!/bin/bash
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib CUDA_CACHE_DISABLE=1
G=$PWD/build/gridjit; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
J=$OUT/ab.jsonl
for r in 1 2; do
  for m in 64x2 64x4 128x2; do for v in 1 0; do
    GRIDJIT_NETWORK_INFERENCE_FEATURES=$v GRIDJIT_NETWORK_TIERS=0 GRIDJIT_CACHE_DIR=/tmp/c$m$v $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/if$v/r$r" >> $J
  done; done
done
echo "ab $((SECONDS-t0)) s" >> $OUT/progress.txt
GRIDJIT_CACHE_DIR=/tmp/c64x21 timeout 120 ncu --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active -k regex:'inference|forward' -c 12 $G bench --config "$(model 64 2)" --dims 3 -i 3 > $OUT/ncu.txt 2>&1
echo "ncu $((SECONDS-t0)) s" >> $OUT/progress.txt
