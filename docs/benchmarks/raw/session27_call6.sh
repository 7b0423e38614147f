#!/bin/bash
# session 27, call 6: where the 64x2 model's training step spends its time, kernel by kernel (ncu, final code)
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
export CUDA_CACHE_DISABLE=1
G=$PWD/.gpu/rt/gridjit
M='{"encoding":{"otype":"HashGrid"},"network":{"otype":"FullyFusedMLP","n_neurons":64,"n_hidden_layers":2,"n_output_dims":16}}'
GRIDJIT_CACHE_DIR=$(mktemp -d) timeout 250 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  -k regex:"gj_encode_forward|gj_network_train_features|gj_encode_backward|gj_network_adam|gj_network_train_zero" \
  --csv $G bench --config "$M" --dims 3 -i 1 > $OUT/ncu_step_64x2.csv 2> $OUT/ncu_step_64x2.err
echo "rc=$?" >> $OUT/ncu_step_64x2.err
