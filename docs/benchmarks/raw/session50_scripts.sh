#!/bin/bash
# Session 50, call 1 (written in session 49): (1) GRIDJIT_STAGE_PAIRS, the 8-byte staging knob:
# C1-C4, S2, S3 point-major forward, forward_dydx, backward, step with the knob off and on, the
# build before it (fc066f5's CLI, .gpu/base) and feature-major, beside bench_tcnn, two rounds
# interleaved; (2) test_gpu_train_step twice (3e-2 tolerance, 6b93d68, not yet GPU-run); (3) ncu of
# C3's point-major forward in words and in pairs and of its feature-major forward.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
export CUDA_CACHE_DISABLE=1
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
xz -dc .gpu/bin/bench_tcnn.xz > /tmp/bt && chmod +x /tmp/bt
rm -rf build/tests/tmp
for r in 1 2; do (cd build && timeout 60 ctest --output-on-failure -R test_gpu_train_step > $OUT/ctest_train_step_$r.txt 2>&1; echo "train_step r$r rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt); done
NEW=$ROOT/build/gridjit BASE=$ROOT/.gpu/base/gridjit_fc066f5
CB=$(mktemp -d) CN=$(mktemp -d)
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C2='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C4='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0,"interpolation":"Smoothstep"}'
S2='{"otype":"HashGrid","n_levels":4,"n_features_per_level":8}'
S3='{"otype":"HashGrid","n_features_per_level":4,"log2_hashmap_size":18,"precision":"fp32"}'
P=forward,forward_dydx,backward,step
R=$OUT/pairs_ab.jsonl
rec() { local tag=$1; shift; echo "{\"tag\": \"$tag\", \"r\": $("$@" 2>/dev/null | tr -d '\n')}" >> $R; }
for round in 1 2; do
  for c in C1 C2 C3 C4 S2 S3; do
    cfg=${!c}; d=3; [ $c = C2 ] && d=2
    case $c in C*) rec "$c/tcnn/r$round" timeout 60 /tmp/bt $c --json;; esac
    rec "$c/base/aos/r$round" env GRIDJIT_CACHE_DIR=$CB timeout 90 $BASE bench -c "$cfg" -d $d -l aos -p $P -i 30 --calls 0 -j
    rec "$c/words/aos/r$round" env GRIDJIT_CACHE_DIR=$CN timeout 90 $NEW bench -c "$cfg" -d $d -l aos -p $P -i 30 --calls 0 -j
    rec "$c/pairs/aos/r$round" env GRIDJIT_STAGE_PAIRS=1 GRIDJIT_CACHE_DIR=$CN timeout 90 $NEW bench -c "$cfg" -d $d -l aos -p $P -i 30 --calls 0 -j
    rec "$c/new/soa/r$round" env GRIDJIT_CACHE_DIR=$CN timeout 90 $NEW bench -c "$cfg" -d $d -l soa -p $P -i 30 --calls 0 -j
  done
  log "round $round"
done
for v in words pairs soa; do
  l=aos; [ $v = soa ] && l=soa; k=0; [ $v = pairs ] && k=1
  GRIDJIT_STAGE_PAIRS=$k GRIDJIT_CACHE_DIR=$CN timeout 60 ncu --clock-control none -k regex:forward -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
    $NEW bench -c "$C3" -d 3 -l $l -p forward -i 20 --calls 0 > $OUT/ncu_c3_forward_$v.txt 2>&1
  log "ncu c3 $v rc=$?"
done
python3 - $R >> $OUT/progress.txt <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t = collections.defaultdict(list)
for row in rows:
    c, who = row["tag"].split("/")[0], "/".join(row["tag"].split("/")[1:-1])
    r = row["r"]
    passes = r.get("passes", r)
    for p, v in passes.items():
        v = v.get("median_ms") if isinstance(v, dict) else v
        if isinstance(v, (int, float)):
            t[(c, who, p)].append(v)
for (c, who, p), v in sorted(t.items()):
    print(c, who, p, " ".join(f"{x:.4f}" for x in v))
PY
# ---- call4.sh
#!/bin/bash
# Session 50, call 4: after dropping GRIDJIT_STAGE_PAIRS (14e4459): the GPU label, the
# point-major forward of C1, C3, S2 against fc066f5's CLI (should be equal), the rest of the suite, pytest.
set -u
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib
export PATH=$PATH:/usr/local/cuda/bin
export CUDA_CACHE_DISABLE=1
t0=$SECONDS
log() { echo "$* $((SECONDS-t0)) s" >> $OUT/progress.txt; }
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/progress.txt
git log --oneline -1 | cut -c1-60 >> $OUT/progress.txt
rm -rf build/tests/tmp build/Testing
(cd build && timeout 130 ctest -j2 --output-on-failure -L gpu > $OUT/ctest_gpu.txt 2>&1; echo "gpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
NEW=$ROOT/build/gridjit BASE=$ROOT/.gpu/base/gridjit_fc066f5
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
S2='{"otype":"HashGrid","n_levels":4,"n_features_per_level":8}'
for c in C1 C3 S2; do for v in base new; do B=$NEW; [ $v = base ] && B=$BASE
  echo "$c $v $(timeout 60 $B bench -c "${!c}" -d 3 -l aos -p forward,forward_dydx -i 30 --calls 0 -j 2>/dev/null | tr -d '\n')" >> $OUT/revert_ab.txt
done; done
log "ab"
(cd build && timeout 150 ctest -j16 --output-on-failure -LE 'gpu|exhaustive' > $OUT/ctest_nongpu.txt 2>&1; echo "nongpu rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt)
GRIDJIT_TEST_BUILD_DIR=$ROOT/build GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0 PYTHONPATH=$ROOT/python/src timeout 150 python3 -m pytest python/tests -q -rs -p no:cacheprovider > $OUT/pytest.txt 2>&1
echo "pytest rc=$? $((SECONDS-t0)) s" >> $OUT/progress.txt

# ---- the next session's calls (.gpu/s51/call1.sh, call2.sh), not run in the fiftieth session: its device time ran out
# ---- .gpu/s51/call1.sh
#!/bin/bash
# Session 51, call 1 (session 50's call 2, not run: no device time left): (1) where a
# synchronised PyTorch step waits on the host: step_host_time.py for gridjit.torch (2^18 with
# cProfile, 2^21) then tinycudann (built meanwhile); (2) ncu of the 64x2 model's inference and
# fused backward kernels.
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
  TCNN_CUDA_ARCHITECTURES=90 MAX_JOBS=10 taskset -c 4-15 python3 setup.py build_ext >/tmp/tcnn.log 2>&1; echo "rc=$?" >> /tmp/tcnn.log) &
bpid=$!
NEW=$ROOT/build/gridjit BASE=$ROOT/.gpu/base/gridjit_fc066f5
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
C3='{"otype":"HashGrid","n_levels":8,"n_features_per_level":4,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
for c in C1 C3; do for v in base new; do B=$NEW; [ $v = base ] && B=$BASE
  echo "$c $v $(CUDA_CACHE_DISABLE=1 timeout 60 $B bench -c "${!c}" -d 3 -l aos -p forward,forward_dydx -i 30 --calls 0 -j 2>/dev/null | tr -d '\n')" >> $OUT/revert_ab.txt
done; done
log "revert ab"
export GRIDJIT_LIBRARY=$ROOT/build/libgridjit.so.0
for p in 18 21; do
  PYTHONPATH=$ROOT/python/src timeout 60 taskset -c 0-3 python3 python/benchmarks/step_host_time.py --package gridjit --log2-points $p --profile $(( p == 18 ? 100 : 0 )) > $OUT/host_gridjit_$p.txt 2>&1
done
log "host gridjit"
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 120 ncu --clock-control none -k 'regex:^gj_network_(inference|backward)$' -c 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  build/gridjit bench --config "$M" --dims 3 -i 20 --output fp16 > $OUT/ncu_model_64x2.txt 2>&1
log "ncu model rc=$?"
wait $bpid; tail -1 /tmp/tcnn.log >> $OUT/progress.txt
TP=/tmp/tcnn/tiny-cuda-nn/bindings/torch/build/lib.linux-x86_64-cpython-312:/tmp/tcnn/tiny-cuda-nn/bindings/torch
for p in 18 21; do
  PYTHONPATH=$TP timeout 60 taskset -c 0-3 python3 python/benchmarks/step_host_time.py --package tinycudann --log2-points $p --profile $(( p == 18 ? 100 : 0 )) > $OUT/host_tcnn_$p.txt 2>&1
done
log "host tcnn"
head -5 $OUT/host_*.txt >> $OUT/progress.txt
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
