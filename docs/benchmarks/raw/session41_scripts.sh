## .gpu/s40/next_call1.sh (run as this session's first call, H100)
#!/bin/bash
# For session 41, call 1 (the forward for training in two passes with the inference's variants): a model's inference fused / two passes / two passes + fetch / two passes
# overlapped in chunks (GRIDJIT_NETWORK_FEATURES_OVERLAP=16/18, with the encoding forward's warp cap
# and without) for 64x2 and 64x4, two rounds, beside tiny-cuda-nn's JIT inference (64x2); the other
# models fused / two passes / fetch; then test_gpu_network.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib CUDA_CACHE_DISABLE=1
G=$PWD/build/gridjit; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn_jit.xz > /tmp/btj && chmod +x /tmp/btj
model() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
J=$OUT/ab.jsonl
# variant: INFERENCE_FEATURES/FETCH/OVERLAP/GROUPED_FORWARD_WARPS_PER_SM (x: unset)/FORWARD_FEATURES
one() { m=$1; v=$2; r=$3; IFS=/ read -r i f o w t <<< "$v"
  ( [ $w != x ] && export GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM=$w
    GRIDJIT_NETWORK_FORWARD_FEATURES=$t GRIDJIT_NETWORK_INFERENCE_FEATURES=$i GRIDJIT_NETWORK_FEATURES_FETCH=$f GRIDJIT_NETWORK_FEATURES_OVERLAP=$o GRIDJIT_NETWORK_TIERS=0 \
      GRIDJIT_CACHE_DIR=/tmp/c$m$i$f$t timeout 60 $G bench --config "$(model ${m%x*} ${m#*x})" --dims 3 -i 30 --json 2>>$OUT/err.txt ) \
      | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "$m/$v/r$r" >> $J
}
for r in 1 2; do
  CUDA_CACHE_PATH=$(mktemp -d) timeout 60 /tmp/btj --cache-dir $(mktemp -d) --skip-unfused >> $OUT/tcnn_jit.jsonl 2>>$OUT/err.txt
  for m in 64x2 64x4; do for v in 0/0/0/x/0 1/0/0/x/1 1/1/0/x/1 1/0/16/x/1 1/0/18/x/1 1/0/18/0/1; do one $m $v $r; done; done
  for m in 32x2 128x2; do for v in 0/0/0/x/0 1/0/0/x/0 1/1/0/x/0; do one $m $v $r; done; done
  echo "ab round $r $((SECONDS-t0)) s" >> $OUT/progress.txt
done
# issue 17: C2's feature-major forward on rays against uniform points, launch shapes (-b, -t)
C2='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
for r in 1 2; do for s in "-b 256 -t 1" "-b 256 -t 2" "-b 512 -t 1" "-b 128 -t 2"; do for in in uniform rays; do
  timeout 60 $G bench -c "$C2" -d 2 -l soa -p forward $s -i 30 --calls 0 --input $in -j 2>>$OUT/err.txt \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); d["label"]=sys.argv[1]; print(json.dumps(d))' "C2/$in/${s// /}/r$r" >> $OUT/c2_rays.jsonl
done; done; done
echo "c2 rays $((SECONDS-t0)) s" >> $OUT/progress.txt
(cd build && timeout 240 ctest --output-on-failure -R 'test_gpu_network$') > $OUT/ctest.txt 2>&1
echo "ctest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt

## .gpu/s41/callB.sh (the whole suite)
#!/bin/bash
# Session 41, call B: the whole suite on HEAD: ctest -L gpu (two at a time) beside ctest -LE gpu,
# then the Python lane in the time left.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
(cd build && timeout 300 ctest --output-on-failure -j2 -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "ctest -L gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
(cd build && timeout 300 ctest --output-on-failure -j12 -LE gpu > $OUT/ctest_nongpu.txt 2>&1; echo "ctest -LE gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt) &
wait
GRIDJIT_TEST_BUILD_DIR=$ROOT/build PYTHONPATH=$ROOT/python/src GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 \
  timeout $(( 585 - (SECONDS - t0) )) python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
log "pytest rc=$?"

## .gpu/s41/callC.sh (the new defaults against the knobs off)
#!/bin/bash
# Session 41, call C: the new defaults (fetch on, the forward in two passes where the inference is) against
# the knobs off, beside tiny-cuda-nn's JIT, two rounds interleaved.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib CUDA_CACHE_DISABLE=1
G=$PWD/build/gridjit; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 >> $OUT/progress.txt
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
  one 64x2 x/x/x $r; one 64x2 1/x/1 $r; one 64x2 1/0/1 $r
  one 64x4 x/x/x $r; one 64x4 x/0/0 $r; one 128x2 x/x/x $r; one 128x2 x/0/x $r; one 32x2 x/x/x $r; one 32x2 1/x/1 $r
  echo "round $r $((SECONDS-t0)) s" >> $OUT/progress.txt
done
