#!/bin/bash
# session 28, call 4: the side stream at the greatest priority (GRIDJIT_BESIDE_PRIORITY 1 / 0) x coarse blocks per SM
export LD_LIBRARY_PATH=$PWD/.gpu/rt:$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
S=$(date +%s)
G=$PWD/.gpu/rt/gridjit
C1='{"otype":"HashGrid","n_levels":16,"n_features_per_level":2,"log2_hashmap_size":19,"base_resolution":16,"per_level_scale":2.0}'
m() { echo "{\"encoding\":{\"otype\":\"HashGrid\"},\"network\":{\"otype\":\"FullyFusedMLP\",\"n_neurons\":$1,\"n_hidden_layers\":$2,\"n_output_dims\":16}}"; }
eb() { # eb NAME CONFIG DIMS BESIDE BLOCKS PRIO
  echo "{\"c\":\"$1\",\"beside\":$4,\"cb\":$5,\"prio\":$6,\"P\":2097152,\"r\":$(GRIDJIT_BESIDE_PRIORITY=$6 GRIDJIT_COARSE_BESIDE_MIN_POINTS=$4 GRIDJIT_COARSE_BLOCKS_PER_SM=$5 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 40 $G bench -c "$2" -d $3 -p backward,backward_input,step -i 30 --calls 0 -j)}" >> $OUT/enc.jsonl
}
mb() { # mb ROUND BESIDE BLOCKS PRIO N L
  echo "{\"round\":$1,\"beside\":$2,\"cb\":$3,\"prio\":$4,\"m\":\"$5 $6\",\"r\":$(GRIDJIT_BESIDE_PRIORITY=$4 GRIDJIT_COARSE_BESIDE_MIN_POINTS=$2 GRIDJIT_COARSE_BLOCKS_PER_SM=$3 GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 60 $G bench --config "$(m $5 $6)" --dims 3 -i 30 --json)}" >> $OUT/model.jsonl
}
for r in 1 2; do
  for v in "0 2 1" "0 5 1" "1 4 1" "1 5 1" "1 6 1" "1 5 0"; do
    eb C1 "$C1" 3 $v; mb $r $v 64 2; mb $r $v 64 4
  done
  echo "round $r $(( $(date +%s) - S ))s" >> $OUT/log.txt
done
for v in "0 2 1" "0 5 1" "1 5 1"; do eb C2 "$C1" 2 $v; done
echo "done $(( $(date +%s) - S ))s" >> $OUT/log.txt
