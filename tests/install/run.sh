#!/usr/bin/env bash
# The installation test (ctest label "install"): installs an already-built tree into a
# temporary prefix and builds and runs tests/install/consumer.c three ways:
#   1. find_package(gridjit): a CMake project (tests/install/CMakeLists.txt) linking
#      gridjit::gridjit and gridjit::gridjit_static;
#   2. pkg-config, shared:  cc consumer.c $(pkg-config --cflags --libs gridjit);
#   3. pkg-config, static:  cc consumer.c $(pkg-config --cflags gridjit) $(pkg-config --static --libs gridjit),
#      with -lgridjit taken from libgridjit.a.
# Fails when any of them fails. Usage:
#   run.sh BUILD_DIR WORK_DIR VERSION [EXTRA_FLAGS]
# Environment: CMAKE (default cmake), CC (default cc), CMAKE_GENERATOR (passed through).
# EXTRA_FLAGS go on the consumer's compile and link lines (the sanitizer flags of a
# GRIDJIT_SANITIZE build, whose libraries need the sanitizer runtime).
set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: $0 BUILD_DIR WORK_DIR VERSION [EXTRA_FLAGS]" >&2; exit 2; }
build_dir=$1
work=$2
version=$3
extra_flags=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmake=${CMAKE:-cmake}
cc=${CC:-cc}
prefix=$work/prefix

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'install test: FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"

step "cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
pc_file=$(find "$prefix" -name gridjit.pc -path '*/pkgconfig/*' | head -n1)
[[ -n $pc_file ]] || fail "no gridjit.pc installed under $prefix"
libdir=$(dirname "$(dirname "$pc_file")")
for f in "$prefix/include/gridjit.h" "$libdir/libgridjit.a" "$libdir/libgridjit.so" \
         "$libdir/cmake/gridjit/gridjitConfig.cmake" "$libdir/cmake/gridjit/gridjitConfigVersion.cmake" \
         "$libdir/cmake/gridjit/gridjitTargets.cmake" "$libdir/pkgconfig/gridjit.pc"; do
    [[ -e $f ]] || fail "not installed: $f"
done
soname=$(readelf -d "$libdir/libgridjit.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == libgridjit.so.${version%%.*} && -e $libdir/$soname ]] || fail "SONAME '$soname' (expected libgridjit.so.${version%%.*}, installed)"
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
echo "SONAME: $soname"
if [[ -x $prefix/bin/gridjit ]]; then
    "$prefix/bin/gridjit" info --config '{"otype": "HashGrid", "n_levels": 2}' >/dev/null || fail "installed CLI"
fi
# Nothing of the build tree may leak into the installed package files (the prefix itself
# may lie inside the build tree, as it does here).
build_abs=$(cd "$build_dir" && pwd)
if grep -rlE -- "$build_abs/(include|libgridjit|CMakeFiles|pkgconfig)" "$libdir/cmake" "$libdir/pkgconfig"; then
    fail "installed package files name the build tree"
fi

step "1. find_package(gridjit $version)"
cmake_flags=()
[[ -n $extra_flags ]] && cmake_flags+=("-DCMAKE_C_FLAGS=$extra_flags" "-DCMAKE_EXE_LINKER_FLAGS=$extra_flags")
"$cmake" -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DGRIDJIT_VERSION="$version" -DCMAKE_BUILD_TYPE=Release "${cmake_flags[@]}" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "configuring the find_package consumer"; }
grep 'gridjit .* from' "$work/cmake.log" || true
"$cmake" --build "$work/cmake" >"$work/cmake-build.log" 2>&1 || { cat "$work/cmake-build.log"; fail "building the find_package consumer"; }
readelf -d "$work/cmake/consumer_shared" | grep -q "NEEDED.*\[$soname\]" || fail "consumer_shared does not need $soname"
readelf -d "$work/cmake/consumer_static" | grep -q 'NEEDED.*libgridjit' && fail "consumer_static needs libgridjit.so"
"$work/cmake/consumer_shared" || fail "find_package: gridjit::gridjit consumer"
"$work/cmake/consumer_static" || fail "find_package: gridjit::gridjit_static consumer"

# The version file: another major (or, before 1.0, minor) version is refused.
major=${version%%.*}
rest=${version#*.}
minor=${rest%%.*}
if [[ $major == 0 ]]; then other="0.$((minor + 1))"; else other="$((major + 1)).0"; fi
if "$cmake" -S "$here" -B "$work/cmake-other" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DGRIDJIT_VERSION="$other" >"$work/cmake-other.log" 2>&1; then
    fail "find_package(gridjit $other) accepted version $version"
fi
echo "find_package(gridjit $other) refused, as it should be"

export PKG_CONFIG_PATH=$libdir/pkgconfig
step "2. pkg-config (shared): $(pkg-config --cflags --libs gridjit)"
# shellcheck disable=SC2046,SC2086 # word splitting of the flags and of pkg-config's output is intended
"$cc" $extra_flags -o "$work/pc_shared" "$here/consumer.c" $(pkg-config --cflags --libs gridjit) -lm ||
    fail "compiling with pkg-config"
readelf -d "$work/pc_shared" | grep -q "NEEDED.*\[$soname\]" || fail "pc_shared does not need $soname"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/pc_shared" || fail "pkg-config shared consumer"

static_libs=$(pkg-config --static --libs gridjit)
step "3. pkg-config --static: $static_libs"
# -lgridjit would pick libgridjit.so; -l:libgridjit.a takes the archive, so that the link
# proves Libs.private complete.
# shellcheck disable=SC2046,SC2086
"$cc" $extra_flags -o "$work/pc_static" "$here/consumer.c" $(pkg-config --cflags gridjit) \
    ${static_libs//-lgridjit/-l:libgridjit.a} -lm || fail "linking with pkg-config --static"
readelf -d "$work/pc_static" | grep -q 'NEEDED.*libgridjit' && fail "pc_static needs libgridjit.so"
"$work/pc_static" || fail "pkg-config static consumer"

step "install test: all three consumers passed"
