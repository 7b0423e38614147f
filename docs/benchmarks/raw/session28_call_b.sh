#!/bin/bash
# session 28, call 2: where the coarse kernel runs beside the main one (timeline), the GPU tests
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS" >> $OUT/log.txt
ls /usr/local/cuda/extras/CUPTI/lib64 2>/dev/null | head -3 >> $OUT/log.txt
for t in test_gpu_passes test_gpu_train_step; do
  (cd .gpu/rt && GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$t) > $OUT/$t.log 2>&1; echo "$t rc=$?" >> $OUT/log.txt
  tail -3 $OUT/$t.log >> $OUT/log.txt
done
echo "tests $(( $(date +%s) - S ))s" >> $OUT/log.txt
if [ -n "$NSYS" ]; then
  for v in "0 2" "1 2" "1 4"; do set -- $v
    GRIDJIT_COARSE_BESIDE_MIN_POINTS=$1 GRIDJIT_COARSE_BLOCKS_PER_SM=$2 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 100 $NSYS profile -t cuda -o $OUT/enc_$1_$2 $G bench -c "$C1" -d 3 -p backward -i 20 > /dev/null 2>&1
    GRIDJIT_COARSE_BESIDE_MIN_POINTS=$1 GRIDJIT_COARSE_BLOCKS_PER_SM=$2 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 100 $NSYS profile -t cuda -o $OUT/model_$1_$2 $G bench --config "$M" --dims 3 -i 20 > /dev/null 2>&1
    for f in enc model; do
      timeout 60 $NSYS stats --report cuda_gpu_trace --format csv -o $OUT/${f}_$1_$2 $OUT/${f}_$1_$2.nsys-rep > /dev/null 2>&1
      rm -f $OUT/${f}_$1_$2.nsys-rep $OUT/${f}_$1_$2.sqlite
      gzip -f $OUT/${f}_$1_$2*.csv
    done
    echo "nsys $1 $2 $(( $(date +%s) - S ))s" >> $OUT/log.txt
  done
fi
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
