#!/bin/sh
# Runs a test executable of an AddressSanitizer build (tests/CMakeLists.txt), and runs it once
# more when LeakSanitizer's own tracer died at exit: LSan stops the process's threads from a
# tracer thread to look for leaks, and under load that tracer sometimes crashes ("Tracer caught
# signal", "LeakSanitizer has encountered a fatal error", exit status 1) although the test
# passed: a failure of the sanitizer's runtime, not a finding (tests/support/run_cli.c retries
# the CLI's children on the same sign). A leak report ("detected memory leaks") or any other
# failure is never run again.
out=$(mktemp) || exit 1
"$@" >"$out" 2>&1
status=$?
cat "$out"
if [ "$status" -ne 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$out" &&
    ! grep -q "detected memory leaks" "$out"; then
    rm -f "$out"
    echo "lsan_retry: LeakSanitizer's tracer failed at exit (not a finding); running the test again"
    "$@"
    exit $?
fi
rm -f "$out"
exit "$status"
