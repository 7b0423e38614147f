#!/usr/bin/env bash
# The network half on a GPU machine, unattended (docs/networks.md §8): builds nothing, runs
# the network GPU test (and the CPU emulation of the same templates, for comparison), then
# `gridjit bench` of networks alone, and writes everything under $OUT when it is set.
#
#   tools/gpu_network_check.sh [BUILD_DIR]      (default: build, relative to the repository)
#
# Prints one PASS/FAIL line per network shape (test_gpu_network), a bench table per
# network, and a last line "gpu_network_check: PASS" or "gpu_network_check: FAIL (...)".
# Exit status 0 only when every check passed.
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT_DIR=${OUT:-}
[ -n "$OUT_DIR" ] && mkdir -p "$OUT_DIR"
failed=""

save() { # save NAME: stdin to $OUT/NAME (and stdout)
    if [ -n "$OUT_DIR" ]; then tee "$OUT_DIR/$1"; else cat; fi
}

for exe in "$BUILD/tests/test_gpu_network" "$BUILD/gridjit"; do
    if [ ! -x "$exe" ]; then
        echo "gpu_network_check: FAIL ($exe is missing: build the tree first)"
        exit 1
    fi
done

# 1. Correctness: every shape against the double reference (a fresh cache: cold compiles).
export GRIDJIT_CACHE_DIR
GRIDJIT_CACHE_DIR=$(mktemp -d)
start=$(date +%s)
"$BUILD/tests/test_gpu_network" 2>&1 | save test_gpu_network.log
rc=${PIPESTATUS[0]}
echo "test_gpu_network: exit $rc in $(( $(date +%s) - start )) s" | save test_gpu_network.status
[ "$rc" -eq 0 ] || failed="$failed test_gpu_network(exit $rc)"
if [ -x "$BUILD/tests/test_network_emulated" ]; then
    "$BUILD/tests/test_network_emulated" 2>&1 | tail -1 | sed 's/^/emulated: /' | save test_network_emulated.log
fi
rm -rf "$GRIDJIT_CACHE_DIR"

# 2. Timings at 2^21 points: the fused examples' MLP shape (32 inputs, 64 x 2, 16 outputs), the
# other widths, 4 hidden layers; then models (HashGrid C1 + the MLP, fused kernels).
bench() { # bench NAME NEURONS HIDDEN [model]: a network alone (32 -> 16), or behind HashGrid C1 (3 dims)
    local name=$1 json dims=32
    json="{\"otype\": \"FullyFusedMLP\", \"n_neurons\": $2, \"n_hidden_layers\": $3, \"activation\": \"ReLU\", \"output_activation\": \"None\"}"
    if [ "${4:-}" = model ]; then
        json="{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": ${json%\}}, \"n_output_dims\": 16}}"
        dims=3
    fi
    "$BUILD/gridjit" bench --config "$json" --dims $dims --output-dims 16 --points 2097152 --iterations 20 --json \
        > "${OUT_DIR:-/tmp}/bench_network_$name.json" 2> "${OUT_DIR:-/tmp}/bench_network_$name.err"
    local brc=$?
    if [ $brc -ne 0 ]; then
        failed="$failed bench_$name(exit $brc)"
        echo "bench $name: FAIL (exit $brc): $(cat "${OUT_DIR:-/tmp}/bench_network_$name.err")"
        return
    fi
    python3 - "$name" "${OUT_DIR:-/tmp}/bench_network_$name.json" <<'PY' 2>/dev/null || cat "${OUT_DIR:-/tmp}/bench_network_$name.json"
import json, sys
r = json.load(open(sys.argv[2]))
p = r["passes"]
print("bench %-8s compile %5.0f / %5.0f ms  inference %.4f  forward %.4f  backward %.4f  backward_input %.4f  step %.4f ms"
      % (sys.argv[1], r["compile_ms"]["inference"], r["compile_ms"]["training"], p["inference"]["median_ms"],
         p["forward"]["median_ms"], p["backward"]["median_ms"], p["backward_input"]["median_ms"], p["step"]["median_ms"]))
PY
}
table=$(mktemp)
for shape in 64x2 16x2 32x2 128x2 64x4; do
    bench "$shape" "${shape%x*}" "${shape#*x}" >> "$table" 2>&1
done
# The fused examples' model (HashGrid C1 + 64 x 2 -> 16), and with 4 hidden layers.
bench C1+64x2 64 2 model >> "$table" 2>&1
bench C1+64x4 64 4 model >> "$table" 2>&1
save bench_network.txt < "$table"
rm -f "$table"

if [ -z "$failed" ]; then
    echo "gpu_network_check: PASS" | save result.txt
    exit 0
fi
echo "gpu_network_check: FAIL ($failed )" | save result.txt
exit 1
