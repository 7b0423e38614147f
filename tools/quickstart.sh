#!/usr/bin/env bash
# gridjit quick start: installs what is missing, configures, builds, then
#   tools/quickstart.sh demo   runs `gridjit demo`
#   tools/quickstart.sh test   runs the test suite with ctest (without the exhaustive label),
#                              then the sanitizer lanes (docs/reliability.md): the suite again
#                              with AddressSanitizer and UndefinedBehaviorSanitizer (in
#                              BUILD-asan, without the gpu and exhaustive labels), and the
#                              thread test (tests/test_threads.c) with ThreadSanitizer (in
#                              BUILD-tsan); any sanitizer report fails the run; then the
#                              Python package, pip-installed into BUILD-python, and its tests
#                              (the package's CMake build stays in BUILD-python/cmake-build)
#   tools/quickstart.sh valgrind
#                              the unit tests again under valgrind's memcheck (in
#                              BUILD-valgrind, each test executable run by valgrind through
#                              GRIDJIT_TEST_LAUNCHER; NVRTC's own reports suppressed by
#                              tests/valgrind.supp): any error or definite leak fails the run.
#                              Without the tests that compile many programs (NVRTC under
#                              memcheck takes minutes a program) or run the CPU emulation;
#                              not part of `test` (22 minutes on 2 cores from an empty
#                              build directory, 4.5 once the tests' caches are filled)
#   tools/quickstart.sh gpu    on a machine with a GPU: refuses without a usable one, then
#                              runs the whole suite (every label: gpu, example, install,
#                              exhaustive; the gpu tests one at a time) and the Python tests
#                              against the built library with the machine's python3
# Safe to run again: it installs only missing packages and rebuilds incrementally.
# Environment: GRIDJIT_BUILD_DIR (default build; the lanes use $GRIDJIT_BUILD_DIR-asan,
# -tsan and -python), CUDA_HOME or CUDA_PATH (default /usr/local/cuda),
# GRIDJIT_SANITIZER_LANES=0 (test: without the sanitizer lanes), GRIDJIT_PYTHON_LANE=0
# (test, gpu: without the Python tests), GRIDJIT_PREBUILT=1 (gpu: use GRIDJIT_BUILD_DIR as
# it is, built on another machine; install and build nothing), GRIDJIT_PYTHON (gpu: the
# interpreter, default python3; it needs pytest, and torch for the torch tests).
set -euo pipefail

say() { printf 'quickstart: %s\n' "$*" >&2; }
die() { printf 'quickstart: error: %s\n' "$*" >&2; exit 1; }

usage() {
    cat >&2 <<'EOF'
Usage: tools/quickstart.sh demo|test|valgrind|gpu
  demo   install missing packages, build (Release) and run `gridjit demo`
  test   install missing packages, build (Release) and run the test suite with ctest,
         then the sanitizer lanes (ASan+UBSan suite, ThreadSanitizer thread test)
         and the Python package's tests in a virtual environment (pip fetches
         scikit-build-core and pytest from PyPI; GRIDJIT_PYTHON_LANE=0 leaves it out)
  valgrind
         the same set-up, then the unit tests under valgrind's memcheck (slow:
         not part of test)
  gpu    the same set-up, then, on a usable GPU only, the whole suite (every label)
         and the Python tests with python3 (GRIDJIT_PREBUILT=1: a build made elsewhere)
EOF
    exit 2
}

[[ $# -eq 1 ]] || usage
mode=$1
[[ $mode == demo || $mode == test || $mode == valgrind || $mode == gpu ]] || usage

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${GRIDJIT_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)

# ---- Debian packages -------------------------------------------------------
packages=(cmake gcc make libcjson-dev libcmocka-dev libxxhash-dev pkg-config python3-venv)
if [[ $mode == valgrind ]]; then
    packages+=(valgrind)
fi

install_packages() {
    local missing=() p
    if ! command -v dpkg-query >/dev/null 2>&1; then
        say "not a Debian system: make sure these are installed: ${packages[*]}"
        return
    fi
    for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        say "packages: all present (${packages[*]})"
        return
    fi
    if [[ $(id -u) -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
        die "missing packages (${missing[*]}); run as root or install them with apt-get"
    fi
    say "installing missing packages: ${missing[*]}"
    as_root apt-get update -q >&2 || die "apt-get update failed"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
        die "apt-get install failed for: ${missing[*]}"
}

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    else
        sudo "$@"
    fi
}

# ---- CUDA toolkit (headers at build time; libnvrtc is loaded at run time) ---
cuda_root=""

find_cuda() {
    local candidate
    for candidate in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
        if [[ -n $candidate && -f $candidate/include/nvrtc.h && -f $candidate/include/cuda.h ]]; then
            cuda_root=$candidate
            break
        fi
    done
    if [[ -z $cuda_root ]] && command -v nvcc >/dev/null 2>&1; then
        candidate=$(dirname "$(dirname "$(command -v nvcc)")")
        [[ -f $candidate/include/nvrtc.h ]] && cuda_root=$candidate
    fi
    if [[ -z $cuda_root ]]; then
        die "the CUDA toolkit (13.x) is required: gridjit builds against its headers (cuda.h, nvrtc.h)
and loads libnvrtc.so.13 at run time. Install CUDA 13 into /usr/local/cuda (NVIDIA's apt
repository: package cuda-toolkit-13-0; or the runfile from
https://developer.nvidia.com/cuda-downloads), or set CUDA_HOME to where it is installed."
    fi
    say "CUDA toolkit: $cuda_root ($("$cuda_root/bin/nvcc" --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'nvcc not found'))"
    # gridjit dlopen()s libnvrtc.so.13; make it findable when the toolkit is not on the loader path.
    local ldconfig
    ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
    if ! "$ldconfig" -p 2>/dev/null | grep -q 'libnvrtc\.so\.13'; then
        local dir
        for dir in "$cuda_root/lib64" "$cuda_root/lib" "$cuda_root/targets/x86_64-linux/lib"; do
            if [[ -e $dir/libnvrtc.so.13 ]]; then
                say "libnvrtc.so.13 is not on the loader path: using $dir"
                export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                return
            fi
        done
        say "warning: libnvrtc.so.13 not found: compilation will be skipped (install cuda-nvrtc-13-0)"
    fi
}

# ---- configure and build -----------------------------------------------------
check_cmake() {
    local version
    version=$(cmake --version | head -n1 | grep -o '[0-9][0-9.]*' | head -n1)
    if ! printf '3.25\n%s\n' "$version" | sort -C -V; then
        die "CMake $version is too old: gridjit needs CMake 3.25 or newer (Debian 12 and Ubuntu 24.04 have it; elsewhere: https://apt.kitware.com or 'pip install cmake')"
    fi
}

build() {
    check_cmake
    local start=$SECONDS
    say "configuring $build_dir (Release)"
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda_root" >&2
    say "building with $jobs jobs"
    cmake --build "$build_dir" -j"$jobs" >&2
    build_seconds=$((SECONDS - start))
}

# ---- sanitizer lanes (test) ----------------------------------------------------
# 1. AddressSanitizer + UndefinedBehaviorSanitizer (GRIDJIT_SANITIZE): the whole suite but
#    the gpu and exhaustive labels; a report aborts the test that made it.
# 2. ThreadSanitizer (GRIDJIT_TSAN): tests/test_threads.c only (threads on one context and
#    on several, compiling, reading and writing one cache); halt_on_error makes a report fail it.
# Each lane has its own build directory, built incrementally like the main one.
sanitizer_lanes() {
    local asan_dir=${build_dir%/}-asan tsan_dir=${build_dir%/}-tsan start

    start=$SECONDS
    say "sanitizer lane 1/2: AddressSanitizer + UndefinedBehaviorSanitizer in $asan_dir"
    cmake -S . -B "$asan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRIDJIT_SANITIZE=ON \
        -DCUDAToolkit_ROOT="$cuda_root" >&2
    cmake --build "$asan_dir" -j"$jobs" >&2
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:protect_shadow_gap=0} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        ctest --test-dir "$asan_dir" --output-on-failure -j"$jobs" -LE 'gpu|exhaustive' ||
        die "the AddressSanitizer/UndefinedBehaviorSanitizer lane failed (see above)"
    timings+="; asan+ubsan lane $((SECONDS - start)) s"

    start=$SECONDS
    say "sanitizer lane 2/2: ThreadSanitizer (tests/test_threads.c) in $tsan_dir"
    cmake -S . -B "$tsan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRIDJIT_TSAN=ON \
        -DCUDAToolkit_ROOT="$cuda_root" >&2
    cmake --build "$tsan_dir" -j"$jobs" --target test_threads >&2
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
        ctest --test-dir "$tsan_dir" --output-on-failure --no-tests=error -R '^test_threads$' ||
        die "the ThreadSanitizer lane failed (see above)"
    timings+="; tsan lane $((SECONDS - start)) s"
}

# ---- memcheck lane (valgrind) ---------------------------------------------------
# The unit tests, each executable run by valgrind (GRIDJIT_TEST_LAUNCHER), in their own build
# directory. Left out: the tests that compile dozens of programs with NVRTC (test_compile_archs,
# the pairwise shards, test_network_codegen: over 15 minutes under memcheck), the CPU
# emulation of the kernels (hours), and the thread test (ThreadSanitizer's lane). Errors in
# forked children count too (valgrind follows forks).
valgrind_lane() {
    local dir=${build_dir%/}-valgrind start=$SECONDS
    command -v valgrind >/dev/null 2>&1 || die "valgrind is not installed (apt-get install valgrind)"
    say "memcheck lane: the unit tests under valgrind in $dir"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda_root" \
        "-DGRIDJIT_TEST_LAUNCHER=valgrind;--error-exitcode=99;--leak-check=full;--errors-for-leak-kinds=definite;--suppressions=$PWD/tests/valgrind.supp;-q" >&2
    cmake --build "$dir" -j"$jobs" >&2
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L unit -LE threads \
        -E 'emulated|pairwise|test_compile_archs|test_network_codegen' || die "the memcheck lane failed (see above)"
    timings="memcheck lane $((SECONDS - start)) s"
}

build_seconds=0
timings=""
if [[ $mode == gpu && ${GRIDJIT_PREBUILT:-0} == 1 ]]; then
    # A build tree made on another machine (the same path there): nothing is installed or
    # rebuilt here, where the build's own tools may be missing.
    [[ -x $build_dir/gridjit && -f $build_dir/CTestTestfile.cmake ]] ||
        die "GRIDJIT_PREBUILT=1: $build_dir holds no built tree (gridjit and CTestTestfile.cmake); build it first"
    say "using the build in $build_dir as it is (GRIDJIT_PREBUILT=1)"
else
    install_packages
    find_cuda
    build
fi

# ---- the Python package: installed into a virtual environment, then its tests ----
# (pip fetches the build backend, scikit-build-core, and pytest from PyPI; PyTorch is not
# installed here, so the torch tests skip and say so; the GPU machine runs them.)
# The package's CMake build directory is kept in the environment (cmake-build) and shared
# by the install and by the wheel that python/tests/test_package.py builds
# (GRIDJIT_TEST_BUILD_DIR), so that both rebuild incrementally. Both build without build
# isolation, with the environment's scikit-build-core: an isolated build environment is
# temporary, and the kept CMake cache would point into it.
python_lane() {
    local lane_start=$SECONDS venv=$build_dir-python cmake_build
    if [[ ! -x $venv/bin/python ]]; then
        python3 -m venv "$venv" >&2 || die "python3 -m venv failed (is python3-venv installed?)"
    fi
    venv=$(cd "$venv" && pwd) # absolute: pip runs the build backend in another directory
    cmake_build=$venv/cmake-build
    say "python lane: pip install './python[test]' into $venv (CMake build in $cmake_build), then pytest"
    # First the build backend and pytest (the requirements of python/pyproject.toml's test
    # extra), from the package index (PyPI, or what PIP_INDEX_URL names); once installed, a
    # later run needs no network.
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --retries 2 --timeout 30 \
        'scikit-build-core>=0.10' 'pytest>=7' >&2 ||
        die "the Python lane could not install scikit-build-core and pytest into $venv: pip needs the package
index (PyPI, or a mirror in PIP_INDEX_URL) the first time, and it failed or is unreachable (see pip's
message above). Run with GRIDJIT_PYTHON_LANE=0 to leave the Python lane out (the C suite and the
sanitizer lanes need no network)."
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
        -C build-dir="$cmake_build" './python[test]' >&2 ||
        die "pip install ./python failed"
    GRIDJIT_TEST_BUILD_DIR=$cmake_build "$venv/bin/python" -m pytest python/tests -q -rs -p no:cacheprovider ||
        die "python tests failed"
    timings="$timings; python $((SECONDS - lane_start)) s"
}

# ---- the GPU lane (gpu) ---------------------------------------------------------
# The Python tests on this machine's python3, against the library just built (python/src
# with GRIDJIT_LIBRARY: nothing is installed, nothing fetched).
gpu_python_tests() {
    local python=${GRIDJIT_PYTHON:-python3} start=$SECONDS library
    library=$(cd "$build_dir" && pwd)/libgridjit.so.0
    "$python" -c 'import pytest' 2>/dev/null ||
        die "the Python tests need pytest in $python (pip install pytest), or GRIDJIT_PYTHON_LANE=0 to leave them out"
    "$python" -c 'import torch' 2>/dev/null || say "warning: no torch in $python: the gridjit.torch tests will skip"
    say "python tests: $python, python/src with GRIDJIT_LIBRARY=$library"
    PYTHONPATH="$PWD/python/src${PYTHONPATH:+:$PYTHONPATH}" GRIDJIT_LIBRARY="$library" \
        "$python" -m pytest python/tests -q -rs -p no:cacheprovider --durations=10 || die "python tests failed"
    timings+="; python $((SECONDS - start)) s"
}

gpu_lane() {
    local gpu start=$SECONDS
    gpu=$("$build_dir/gridjit" --version | grep '^GPU' || true)
    case "$gpu" in
    "GPU not available"*)
        die "no usable GPU here ${gpu#GPU not available }: the gpu lane runs the GPU tests, which need one;
'tools/quickstart.sh test' runs everything else" ;;
    "") die "$build_dir/gridjit --version printed no GPU line" ;;
    esac
    say "$gpu"
    say "the whole suite, every label: first all but gpu, in parallel; then the gpu tests one at a time"
    ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" -LE gpu || die "the suite failed (see above)"
    ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -L gpu || die "the GPU tests failed (see above)"
    timings="suite $((SECONDS - start)) s"
    if [[ ${GRIDJIT_PYTHON_LANE:-1} != 0 ]]; then
        gpu_python_tests
    fi
    say "all passed on the GPU (build ${build_seconds} s; ${timings}; total $SECONDS s)"
}

case $mode in
gpu)
    gpu_lane
    ;;
valgrind)
    valgrind_lane
    say "all passed under valgrind (build ${build_seconds} s; ${timings}; total $SECONDS s)"
    ;;
demo)
    say "running $build_dir/gridjit demo"
    "$build_dir/gridjit" demo
    say "the tool is $build_dir/gridjit; to call it gridjit, as README does: export PATH=\"$(cd "$build_dir" && pwd):\$PATH\""
    ;;
test)
    say "running the test suite (ctest -LE exhaustive)"
    # The GPU tests (label gpu) report themselves as skipped where no CUDA device
    # can be used; say why, once, before the run.
    gpu=$("$build_dir/gridjit" --version | grep '^GPU' || true)
    case "$gpu" in
    "GPU not available"*) say "the GPU tests will be skipped: ${gpu#GPU not available }" ;;
    *) say "${gpu:-GPU: unknown}" ;;
    esac
    lane_start=$SECONDS
    ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" -LE exhaustive
    timings="suite $((SECONDS - lane_start)) s"
    if [[ ${GRIDJIT_SANITIZER_LANES:-1} != 0 ]]; then
        sanitizer_lanes
    fi
    if [[ ${GRIDJIT_PYTHON_LANE:-1} != 0 ]]; then
        python_lane
    fi
    say "all passed (build ${build_seconds} s; ${timings}; total $SECONDS s)"
    ;;
esac
