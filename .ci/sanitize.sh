#!/usr/bin/env bash
# The whole test suite against a build of the extension with AddressSanitizer
# and UndefinedBehaviorSanitizer (float-cast-overflow included): any
# out-of-bounds access, use-after-free, signed overflow or out-of-range
# float->int conversion in posenc's C++ aborts the run with a stack trace.
#
# Pitfalls this script handles (all seen on this machine):
# - CPython is not built with ASan, so libasan must come first in the process:
#   LD_PRELOAD it. libstdc++ must be preloaded too, or the first C++ exception
#   thrown through pybind11 aborts (ASan's __cxa_throw interceptor cannot find
#   the real one when libstdc++ is loaded later by dlopen).
# - CPython keeps interned objects alive until exit: leak detection is off.
# - A huge request (the hostile-size cases) must come back as NULL, i.e. a
#   MemoryError, as from glibc: allocator_may_return_null=1. The tests' own
#   address-space cap is off under ASan (its shadow needs terabytes), so
#   max_allocation_size_mb caps single requests instead: a fuzzed 8 GiB
#   table would otherwise be allocated, touched and OOM-killed.
# - pytest must capture at the Python level only (--capture=sys): a sanitizer
#   report goes to fd 2 and the process exits at once, so fd-level capture
#   would swallow it and the run would just stop.
# - Build tools (cmake, ninja, the compiler) must not run under the preload,
#   so the extension is built and installed first (not editable: an editable
#   install would rebuild at import, under the preload) and only pytest runs
#   with LD_PRELOAD set.
#
# Usage: .ci/sanitize.sh [extra pytest arguments]   (from anywhere; ~5-8 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
venv=.venv-sanitize
start=$SECONDS

# The kernel copies this CPU runs (cpp/src/cpu.cpp's test, from /proc/cpuinfo's flags): a copy it
# cannot run is never executed under the sanitizers, so it is not built (CMake's POSENC_ISAS).
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { local f; for f; do [[ $flags == *" $f "* ]] || return 1; done; }
isas="baseline"
if has avx2 fma f16c; then
  isas+=";avx2"
  if has avx512f avx512dq avx512bw avx512vl; then isas+=";avx512"; fi
fi
echo "sanitizer build: kernel copies $isas"

python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q scikit-build-core pybind11 numpy pytest pytest-xdist hypothesis threadpoolctl ml_dtypes
"$venv/bin/python" -m pip install -q --no-build-isolation --no-deps --force-reinstall \
  --config-settings=cmake.define.POSENC_SANITIZE=ON --config-settings=cmake.define.POSENC_ISAS="$isas" \
  --config-settings=cmake.build-type=RelWithDebInfo \
  --config-settings=build-dir=build/sanitize .
echo "sanitizer build: $((SECONDS - start)) s"

asan=$(g++ -print-file-name=libasan.so)
cxx=$(g++ -print-file-name=libstdc++.so)
for lib in "$asan" "$cxx"; do
  [[ -e "$lib" ]] || { echo "sanitize.sh: $lib not found (need g++ with libasan)" >&2; exit 1; }
done
# The ASan-instrumented module must really be the one under test (found by
# path: importing it here, before the preload, would abort).
so=$(ls "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"/posenc/_native*.so)
nm -D "$so" | grep __asan_init >/dev/null || { echo "sanitize.sh: $so is not instrumented" >&2; exit 1; }

# Run from a directory without the source tree, so `import posenc` finds the
# instrumented installed package and never the sources.
tests=$(pwd)/tests
cd "$(mktemp -d)"
env LD_PRELOAD="$asan:$cxx" \
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:max_allocation_size_mb=3072:abort_on_error=1:strict_init_order=1:detect_stack_use_after_return=0 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    POSENC_SANITIZED=1 HYPOTHESIS_PROFILE=default \
    "$OLDPWD/$venv/bin/python" -m pytest -q -p no:cacheprovider -p no:warnings --capture=sys -n auto "$tests" "$@"
echo "sanitizer tests: $((SECONDS - start)) s in total"
