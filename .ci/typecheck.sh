#!/usr/bin/env bash
# Types and docs, against the installed posenc:
#  - mypy --strict on python/posenc (the compiled module through python/posenc/_native.pyi);
#  - the examples in the Markdown docs (docs/*.md) as doctests (the docstrings'
#    own examples run in .ci/run's doctest stage);
#  - the Sphinx site (API reference from the numpydoc docstrings) with warnings as errors.
# The tools are the `dev` and `docs` extras of pyproject.toml, installed here (never runtime deps).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
py=${PYTHON:-python}

"$py" - <<'PY' > /tmp/posenc-dev-tools.txt
import tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
print("\n".join(extras["dev"] + extras["docs"]))
PY
xargs -d '\n' "$py" -m pip install -q < /tmp/posenc-dev-tools.txt

echo "--- mypy --strict python/posenc"
"$py" -m mypy --strict python/posenc

echo "--- doctests of the docs"
(cd docs && "$py" -m pytest -q -p no:cacheprovider --doctest-glob='*.md' -o testpaths= . )

echo "--- sphinx-build -W"
rm -rf docs/_build
"$py" -m sphinx -W --keep-going -q -b html docs docs/_build/html
echo "docs built: docs/_build/html/index.html"
