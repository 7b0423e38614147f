#!/usr/bin/env bash
# A fuzzing campaign over every target of a GRIDJIT_FUZZ build, one target at a time
# (docs/reliability.md records the last one). Usage:
#   tests/fuzz/campaign.sh FUZZ_BUILD_DIR OUT_DIR [TARGET=RUNS ...]
# Default runs: meta=10000000 entry=5000000 config=3000000 cli_args=3000000 eval=300000.
# Each target starts from its committed seeds (tests/fuzz/corpus/TARGET) and writes new
# inputs to OUT_DIR/corpus/TARGET, crashes to OUT_DIR/artifacts/, its log to
# OUT_DIR/TARGET.log. Exit 1 when any target found a crash, a leak or a sanitizer report.
set -uo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 FUZZ_BUILD_DIR OUT_DIR [TARGET=RUNS ...]" >&2; exit 2; }
build=$1
out=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -A runs=([meta]=10000000 [entry]=5000000 [config]=3000000 [cli_args]=3000000 [eval]=300000)
order=(meta entry config cli_args eval)
for spec in "$@"; do
    runs[${spec%%=*}]=${spec#*=}
done

mkdir -p "$out/artifacts"
status=0
printf '%-9s %12s %8s %8s %10s  %s\n' target executions seconds exec/s corpus result
for t in "${order[@]}"; do
    [[ ${runs[$t]:-0} -gt 0 ]] || continue
    mkdir -p "$out/corpus/$t"
    dict=()
    [[ -f $here/$t.dict ]] && dict=(-dict="$here/$t.dict")
    start=$SECONDS
    "$build/tests/fuzz/fuzz_$t" -runs="${runs[$t]}" -close_fd_mask=3 -print_final_stats=1 -timeout=25 \
        -rss_limit_mb=4096 -artifact_prefix="$out/artifacts/$t-" "${dict[@]}" \
        "$out/corpus/$t" "$here/corpus/$t" >"$out/$t.log" 2>&1
    rc=$?
    seconds=$((SECONDS - start))
    executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -n1)
    result=ok
    if [[ $rc -ne 0 ]] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz check failed' "$out/$t.log"; then
        result="FAILED (exit $rc; see $out/$t.log)"
        status=1
    fi
    printf '%-9s %12s %8s %8s %10s  %s\n' "$t" "${executed:-?}" "$seconds" \
        "$(( ${executed:-0} / (seconds > 0 ? seconds : 1) ))" "$(find "$out/corpus/$t" -type f | wc -l)" "$result"
done
exit $status
