#!/usr/bin/env bash
# The installation test (ctest label "install"): installs an already-built tree into a
# temporary prefix, then builds and RUNS, without gridjit on LD_LIBRARY_PATH:
#   1. find_package(gridjit): a CMake project (tests/install/CMakeLists.txt) linking
#      gridjit::gridjit and gridjit::gridjit_static, as README's "Install" shows;
#   2. every `cc app.c ...` line of README's "Install" section (pkg-config and plain cc,
#      shared and static), taken from the README itself with app.c = consumer.c and
#      /opt/gridjit = the temporary prefix, so that the README cannot drift from what works;
#   3. examples/minimal, copied out of the tree, as a project of its own against the
#      installed package (examples/README.md).
# Fails when any of them fails. Usage:
#   run.sh BUILD_DIR WORK_DIR VERSION [EXTRA_FLAGS]
# Environment: CMAKE, CC (the tools that configured the build, which ctest passes in; where
# they do not exist, as in a build tree carried to another machine, `cmake` and `cc` from
# PATH), CMAKE_GENERATOR (passed through).
# EXTRA_FLAGS go on the consumers' compile and link lines (the sanitizer flags of a
# GRIDJIT_SANITIZE build, whose libraries need the sanitizer runtime).
set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: $0 BUILD_DIR WORK_DIR VERSION [EXTRA_FLAGS]" >&2; exit 2; }
build_dir=$1
work=$2
version=$3
extra_flags=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
prefix=$work/prefix

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'install test: FAILED: %s\n' "$*" >&2; exit 1; }

# The configured tool when it exists here, else NAME from PATH.
pick_tool() {
    local configured=$1 name=$2 found
    if [[ -n $configured && -x $configured ]]; then
        echo "$configured"
        return
    fi
    found=$(command -v "$name") || fail "no $name: '${configured:-(none configured)}' does not exist here and PATH has no $name"
    [[ -n $configured ]] && echo "install test: $configured (configured) is not an executable here; using $found" >&2
    echo "$found"
}
cmake=$(pick_tool "${CMAKE:-}" cmake)
cc=$(pick_tool "${CC:-}" cc)
echo "cmake: $cmake ($("$cmake" --version | head -n1)); cc: $cc"

rm -rf "$work"
mkdir -p "$work"

step "cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
pc_file=$(find "$prefix" -name gridjit.pc -path '*/pkgconfig/*' | head -n1)
[[ -n $pc_file ]] || fail "no gridjit.pc installed under $prefix"
libdir=$(dirname "$(dirname "$pc_file")")
for f in "$prefix/include/gridjit.h" "$libdir/libgridjit.a" "$libdir/libgridjit.so" \
         "$libdir/cmake/gridjit/gridjitConfig.cmake" "$libdir/cmake/gridjit/gridjitConfigVersion.cmake" \
         "$libdir/cmake/gridjit/gridjitTargets.cmake" "$libdir/pkgconfig/gridjit.pc" \
         "$libdir/pkgconfig/gridjit-static.pc"; do
    [[ -e $f ]] || fail "not installed: $f"
done
soname=$(readelf -d "$libdir/libgridjit.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == libgridjit.so.${version%%.*} && -e $libdir/$soname ]] || fail "SONAME '$soname' (expected libgridjit.so.${version%%.*}, installed)"
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
echo "SONAME: $soname"
# Nothing of the build tree may leak into the installed package files (the prefix itself
# may lie inside the build tree, as it does here).
build_abs=$(cd "$build_dir" && pwd)
if grep -rlE -- "$build_abs/(include|libgridjit|CMakeFiles|pkgconfig)" "$libdir/cmake" "$libdir/pkgconfig"; then
    fail "installed package files name the build tree"
fi

# The consumers run with LD_LIBRARY_PATH as given (on the GPU machine it names the carried
# cJSON), less any directory that holds a libgridjit: they must find it by themselves.
run_path=""
IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
for d in "${dirs[@]}"; do
    [[ -n $d ]] && ! compgen -G "$d/libgridjit.so*" >/dev/null && run_path+=${run_path:+:}$d
done
run_consumer() { # NAME BINARY
    LD_LIBRARY_PATH=$run_path "$2" || fail "$1: the program failed (LD_LIBRARY_PATH='$run_path')"
}
# A binary linked to the shared library records where it is; a static one does not need it.
check_linkage() { # NAME BINARY shared|static
    local dynamic
    dynamic=$(readelf -d "$2")
    if [[ $3 == shared ]]; then
        grep -q "NEEDED.*\[$soname\]" <<<"$dynamic" || fail "$1 does not need $soname"
        local rpath entry found=0
        rpath=$(sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' <<<"$dynamic")
        IFS=: read -ra entries <<<"$rpath"
        for entry in "${entries[@]}"; do
            [[ -d $entry && $(cd "$entry" && pwd -P) == "$(cd "$libdir" && pwd -P)" ]] && found=1
        done
        [[ $found == 1 ]] || fail "$1 has no rpath to $libdir (has '$rpath'): it would need LD_LIBRARY_PATH"
    elif grep -q 'NEEDED.*libgridjit' <<<"$dynamic"; then
        fail "$1 needs libgridjit.so"
    fi
}

# A static link names cJSON and xxHash (-lcjson -lxxhash, gridjit::cjson): their
# development files (libcjson.so or libcjson.a, ...) must be on the linker's path. On a
# machine with only their run-time libraries the static consumers cannot be linked: they
# are skipped there, saying so (LIBRARY_PATH and CMAKE_LIBRARY_PATH can name a directory
# with those files).
static_deps=1
if ! printf 'int main(void) { return 0; }\n' | "$cc" $extra_flags -x c - -o "$work/probe" -lcjson -lxxhash \
    >"$work/probe.log" 2>&1; then
    static_deps=0
    echo "SKIPPED (static consumers): cJSON's or xxHash's development library is not on the linker's path here:"
    sed 's/^/    /' "$work/probe.log"
fi

if [[ -x $prefix/bin/gridjit ]]; then
    LD_LIBRARY_PATH=$run_path "$prefix/bin/gridjit" info --config '{"otype": "HashGrid", "n_levels": 2}' >/dev/null ||
        fail "installed CLI"
fi

step "1. find_package(gridjit $version)"
cmake_flags=()
[[ -n $extra_flags ]] && cmake_flags+=("-DCMAKE_C_FLAGS=$extra_flags" "-DCMAKE_EXE_LINKER_FLAGS=$extra_flags")
"$cmake" -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DGRIDJIT_VERSION="$version" -DCMAKE_BUILD_TYPE=Release "${cmake_flags[@]}" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "configuring the find_package consumer"; }
grep 'gridjit .* from' "$work/cmake.log" || true
"$cmake" --build "$work/cmake" --target consumer_shared >"$work/cmake-build.log" 2>&1 ||
    { cat "$work/cmake-build.log"; fail "building the find_package consumer (gridjit::gridjit)"; }
check_linkage "gridjit::gridjit consumer" "$work/cmake/consumer_shared" shared
run_consumer "find_package: gridjit::gridjit consumer" "$work/cmake/consumer_shared"
if [[ $static_deps == 1 ]]; then
    "$cmake" --build "$work/cmake" --target consumer_static >>"$work/cmake-build.log" 2>&1 ||
        { cat "$work/cmake-build.log"; fail "building the find_package consumer (gridjit::gridjit_static)"; }
    check_linkage "gridjit::gridjit_static consumer" "$work/cmake/consumer_static" static
    run_consumer "find_package: gridjit::gridjit_static consumer" "$work/cmake/consumer_static"
else
    echo "SKIPPED (no static dependencies here): gridjit::gridjit_static consumer"
fi

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

step "2. README's compile lines"
readme=$source_dir/README.md
# The `cc app.c ...  # shared|static` lines between "## Install" and the next section.
mapfile -t lines < <(sed -n '/^## Install/,/^## [^I]/p' "$readme" | grep -E '^cc app\.c .*# (shared|static)$')
[[ ${#lines[@]} -ge 4 ]] || fail "README.md's Install section shows ${#lines[@]} 'cc app.c ... # shared|static' lines (expected 4 or more)"
export PKG_CONFIG_PATH=$libdir/pkgconfig
have_pkg_config=1
command -v pkg-config >/dev/null || have_pkg_config=0
n_built=0
for i in "${!lines[@]}"; do
    line=${lines[$i]}
    kind=${line##*# }
    command=${line%%#*}
    command=${command//\/opt\/gridjit\/lib/$libdir}
    command=${command//\/opt\/gridjit/$prefix}
    command=${command#cc app.c }
    if [[ $have_pkg_config == 0 && $command == *pkg-config* ]]; then
        echo "SKIPPED (no pkg-config on PATH here): $line"
        continue
    fi
    if [[ $static_deps == 0 && $kind == static ]]; then
        echo "SKIPPED (no static dependencies here): $line"
        continue
    fi
    out=$work/readme_$i
    echo "$kind: cc app.c $command"
    # eval: the line's $(pkg-config ...) expands as it does in a shell.
    eval "\"\$cc\" \$extra_flags -o \"\$out\" \"\$here/consumer.c\" $command" || fail "README line failed to build: $line"
    check_linkage "README line '$line'" "$out" "$kind"
    run_consumer "README line '$line'" "$out"
    n_built=$((n_built + 1))
done
echo "built and ran $n_built of the README's ${#lines[@]} lines"

step "3. examples/minimal, out of the tree"
cp -R "$source_dir/examples/minimal" "$work/minimal-src"
"$cmake" -S "$work/minimal-src" -B "$work/minimal-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release "${cmake_flags[@]}" >"$work/minimal.log" 2>&1 &&
    "$cmake" --build "$work/minimal-build" >>"$work/minimal.log" 2>&1 ||
    { cat "$work/minimal.log"; fail "building examples/minimal against the installation"; }
check_linkage "examples/minimal" "$work/minimal-build/minimal" shared
# From another directory: it finds its kernel by itself. Without a GPU it compiles it (or
# says that NVRTC is missing) and exits 0; with one it runs it.
(cd "$work" && run_consumer "examples/minimal" "$work/minimal-build/minimal")

step "install test: passed"
