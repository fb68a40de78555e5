#!/usr/bin/env bash
# The installed package as a user meets it (ctest: install). Installs the
# build into a temporary prefix, then checks there:
#  - the layout: libtessera.so.X.Y.Z with its soname link libtessera.so.X and
#    the development link libtessera.so, headers, CLI, Python package, CMake
#    and pkg-config files;
#  - that libtessera.so exports the public API only (tessera_* C functions
#    and tessera:: C++ API names, nothing of LLVM's or the internals');
#  - that no installed program or library looks into the build tree;
#  - a C project (c/: the C API test, linked as C) and a C++ project (cxx/)
#    configured and built by CMake with find_package(Tessera), and run;
#  - the C API test compiled once more with pkg-config's flags;
#  - the Python package imported with PYTHONPATH set to the installed site
#    directory alone (check_python.py), and the installed CLI's --version;
#  - the attention cost model's module libtessera_attention.so installed beside
#    libtessera.so, libtorch linked by it alone (not by the CLI or
#    libtessera.so), and the installed CLI training an attention model on a
#    dataset it collects, then evaluating the saved model.
# Every consumer's results are checked against sums and products computed
# independently (in C, C++ or numpy). Tools: readelf, nm, c++filt, ldd
# (binutils, libc-bin) and pkg-config (which llvm-14-dev's libxml2-dev brings).
#
# Usage: install_test.sh BUILD_DIR SOURCE_DIR ONNX_TESTS_DIR VERSION LIBDIR PYTHON_SITE_DIR PYTHON
#   (LIBDIR and PYTHON_SITE_DIR relative to the prefix, as CMAKE_INSTALL_LIBDIR
#   and TESSERA_PYTHON_INSTALL_DIR; CMAKE, CMAKE_GENERATOR, CC and CXX from the
#   environment, as the build uses them.)
set -euo pipefail
if [ $# -ne 7 ]; then
  sed -n '2,/^set -e/p' "$0" | sed '$d'
  exit 2
fi
build=$(realpath "$1") src=$(realpath "$2") onnx=$(realpath "$3") version=$4 libdir=$5 pysite=$6 python=$7
: "${CMAKE:=cmake}" "${CMAKE_GENERATOR:=Ninja}" "${CC:=cc}" "${CXX:=c++}"
export CMAKE_GENERATOR
case $pysite in /*) echo "install_test.sh: PYTHON_SITE_DIR must be relative to the prefix (got $pysite)" >&2; exit 2 ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
add_model=$onnx/node/test_add/model.onnx
matmul_model=$onnx/node/test_matmul_2d/model.onnx
conv_model=$onnx/node/test_conv_with_strides_padding/model.onnx
major=${version%%.*}

step() {
  local name=$1 t0=$SECONDS
  shift
  echo "[install] $name"
  "$@"
  echo "[install] $name: ok ($((SECONDS - t0)) s)"
}
fail() { echo "[install] FAILED: $*" >&2; exit 1; }

install() {
  "$CMAKE" --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
}

layout() {
  local lib=$prefix/$libdir
  for f in "$lib/libtessera.so.$version" "$prefix/include/tessera/tessera.h" "$prefix/include/tessera/runtime.h" \
           "$prefix/include/tessera/tensor.h" "$prefix/include/tessera/dtype.h" "$prefix/bin/tessera" \
           "$prefix/$pysite/tessera/__init__.py" "$prefix/$pysite/tessera/__init__.pyi" "$prefix/$pysite/tessera/py.typed" \
           "$lib/cmake/Tessera/TesseraConfig.cmake" "$lib/cmake/Tessera/TesseraConfigVersion.cmake" \
           "$lib/cmake/Tessera/TesseraTargets.cmake" "$lib/pkgconfig/tessera.pc"; do
    [ -f "$f" ] || fail "not installed: ${f#"$prefix"/}"
  done
  ls "$prefix/$pysite"/tessera/_tessera*.so >/dev/null || fail "not installed: the extension module _tessera"
  [ "$(readlink "$lib/libtessera.so.$major")" = "libtessera.so.$version" ] || fail "libtessera.so.$major is no link to libtessera.so.$version"
  [ "$(readlink "$lib/libtessera.so")" = "libtessera.so.$major" ] || fail "libtessera.so is no link to libtessera.so.$major"
  local dyn
  dyn=$(readelf -d "$lib/libtessera.so.$version")
  grep -q "SONAME.*\[libtessera.so.$major\]" <<<"$dyn" || fail "soname is not libtessera.so.$major"
}

# Every dynamic symbol libtessera.so defines must be public API: the C API's
# tessera_* functions, the version node, and C++ names under the classes and
# functions that include/tessera/*.h declare (the list below; internal classes
# such as tessera::Error or tessera::runtime::Executor must stay hidden).
public_cxx="CompiledModel|Tensor|Half|BFloat16|numel_of|dims_to_string|strides_of|dtype_size|dtype_name"
public_cxx+="|dtype_from_name|dtype_supported|onnx_type_name|is_float|is_integer|is_signed"
exports() {
  nm -D --defined-only "$prefix/$libdir/libtessera.so.$major" | awk '{sub(/@.*/, "", $3); print $3}' | c++filt >"$work/exports.txt"
  grep -qx "tessera_session_run" "$work/exports.txt" || fail "tessera_session_run is not exported"
  grep -q "^tessera::CompiledModel::compile(" "$work/exports.txt" || fail "tessera::CompiledModel::compile is not exported"
  if grep -v -E "^(TESSERA_[0-9]+|tessera_[a-z0-9_]+|tessera::($public_cxx)(::|\[|\().*)$" "$work/exports.txt" >"$work/leaks.txt" ||
     grep -E "^tessera_parallel_for$|^tessera::CompiledModel::Impl::" "$work/exports.txt" >>"$work/leaks.txt"; then
    head -20 "$work/leaks.txt"
    fail "libtessera.so exports $(wc -l <"$work/leaks.txt") names outside the API (cmake/libtessera.map)"
  fi
  echo "[install] $(wc -l <"$work/exports.txt") exported names"
}

# Installed files must not depend on the build or source tree (deleted after
# an install, or on another machine).
no_build_paths() {
  for f in "$prefix/$libdir/libtessera.so.$version" "$prefix/bin/tessera" "$prefix/$pysite"/tessera/_tessera*.so \
           "$prefix/$libdir/libtessera_attention.so"; do
    local paths
    paths=$(readelf -d "$f" | grep -E "R(UN)?PATH" || true)
    if grep -q -e "$build" -e "$src" <<<"$paths"; then
      echo "$paths"
      fail "${f#"$prefix"/} looks for libraries in the build or source tree"
    fi
  done
}

# A consumer project: configure, build, run (ARGS...).
consumer() {
  local name=$1 exe=$2
  shift 2
  "$CMAKE" -S "$src/tests/install/$name" -B "$work/$name" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DTESSERA_C_TEST="$src/tests/capi/test_c_api.c" \
    >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "configuring $name"; }
  "$CMAKE" --build "$work/$name" >>"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "building $name"; }
  # The program finds libtessera.so in the prefix (CMake's run path to the imported library).
  # (ldd's output kept first: grep -q stops reading at a match, and under
  # pipefail the writer's SIGPIPE would fail the pipe.)
  local deps
  deps=$(ldd "$work/$name/$exe")
  grep -q "libtessera.so.$major => $prefix/$libdir/" <<<"$deps" || { echo "$deps"; fail "$exe does not load the installed libtessera.so"; }
  "$work/$name/$exe" "$@"
}

c_project() { mkdir -p "$work/c-tmp" && consumer c test_c_api "$add_model" "$work/c-tmp"; }
cxx_project() { consumer cxx matmul "$matmul_model"; }

pkg_config() {
  export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
  [ "$(pkg-config --modversion tessera)" = "$version" ] || fail "pkg-config --modversion tessera"
  # shellcheck disable=SC2046  # the flags are words
  "$CC" -std=c99 -pedantic-errors -DTESSERA_EXPECTED_VERSION="\"$version\"" "$src/tests/capi/test_c_api.c" \
    $(pkg-config --cflags --libs tessera) -Wl,-rpath,"$prefix/$libdir" -o "$work/test_c_api_pc"
  mkdir -p "$work/pc-tmp"
  "$work/test_c_api_pc" "$add_model" "$work/pc-tmp"
}

python_package() {
  (cd "$work" && env -u PYTHONHOME PYTHONPATH="$prefix/$pysite" PYTHONNOUSERSITE=1 \
     "$python" "$src/tests/install/check_python.py" "$prefix/$pysite" "$add_model" "$matmul_model" "$version")
}

cli() {
  local v
  v=$("$prefix/bin/tessera" --version)
  [ "$v" = "$version" ] || fail "installed tessera --version printed '$v', expected $version"
}

# The attention model: only its module loads libtorch; the installed CLI finds
# the module in the prefix, trains, saves, loads and evaluates.
attention() {
  local module=$prefix/$libdir/libtessera_attention.so bin=$prefix/bin/tessera f deps
  [ -f "$module" ] || fail "not installed: $libdir/libtessera_attention.so"
  grep -q "libtorch" <<<"$(ldd "$module")" || fail "libtessera_attention.so does not link libtorch"
  for f in "$bin" "$prefix/$libdir/libtessera.so.$version"; do
    deps=$(ldd "$f")
    if grep -q -e libtorch -e libc10 <<<"$deps"; then fail "${f#"$prefix"/} links libtorch"; fi
  done
  "$bin" dataset collect --networks "$conv_model" --out "$work/ds" --per-task 8 --targets avx2-t1 -q >"$work/ds.log" 2>&1 ||
    { cat "$work/ds.log"; fail "tessera dataset collect"; }
  local args=(--records "$work/ds/records.rank0.jsonl" --dataset "$work/ds" --split within-task --test-share 0.3 -q)
  local out
  out=$("$bin" costmodel train --model attention --epochs 3 --out "$work/attention.pt" "${args[@]}" 2>&1) ||
    { echo "$out"; fail "tessera costmodel train --model attention"; }
  grep -q "trained attention on" <<<"$out" || { echo "$out"; fail "costmodel train printed no summary"; }
  out=$("$bin" costmodel eval --model attention --model-file "$work/attention.pt" "${args[@]}" 2>&1) ||
    { echo "$out"; fail "tessera costmodel eval --model attention"; }
  grep -q "^avx2-t1 " <<<"$out" || { echo "$out"; fail "costmodel eval printed no row for avx2-t1"; }
}

t0=$SECONDS
step "cmake --install $build --prefix $prefix" install
step "layout" layout
step "exported symbols" exports
step "no build-tree paths" no_build_paths
step "C project (find_package)" c_project
step "C++ project (find_package)" cxx_project
step "pkg-config" pkg_config
step "Python package alone" python_package
step "CLI" cli
step "attention model (its libtorch module)" attention
echo "[install] all checks passed in $((SECONDS - t0)) s"
