#!/bin/bash
# Ran on 3ecd20d's build (the session's first call): GRIDJIT_FAST_COMPILE kernels, the side stream's host cost, coarse blocks x staging carveout
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv > $OUT/smi.txt
timeout 300 .gpu/s29/b.sh > $OUT/b.log 2>&1; echo "b rc=$?" >> $OUT/rc.txt
timeout 60 .gpu/s29/c.sh > $OUT/c.log 2>&1; echo "c rc=$?" >> $OUT/rc.txt
timeout 200 .gpu/s29/a.sh > $OUT/a.log 2>&1; echo "a rc=$?" >> $OUT/rc.txt
