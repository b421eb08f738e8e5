#!/usr/bin/env bash
# Differential fuzzing, CI length: tests/test_fuzz.py (native against reference over the whole
# public API, mutated arguments) in rounds of fresh random seeds until a time budget is spent.
# Any exception outside ValueError/TypeError/IndexError/MemoryError, any disagreement between
# the backends, any crash fails the stage; hypothesis prints the falsifying call and its seed.
#
# Usage: .ci/fuzz.sh [seconds]   (default 150; a developer's long run: see docs/robustness.md)
# Needs posenc installed in $PYTHON (default: the active python; CI runs it in .venv-ci).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-150}
per_round=${POSENC_FUZZ_ROUND:-300}
python=${PYTHON:-python}
functions=$(cd tests && "$python" -c "import test_fuzz; print(len(test_fuzz.FUZZED))")
log=$(mktemp)
start=$SECONDS rounds=0 last=0
# A round is started only if one more of the last round's length still fits the budget.
while (( rounds == 0 || SECONDS - start + last <= budget )); do
  round_start=$SECONDS
  seed=$RANDOM$RANDOM
  if ! POSENC_FUZZ_EXAMPLES=$per_round "$python" -m pytest -q -p no:cacheprovider -p no:warnings \
       tests/test_fuzz.py -x --hypothesis-seed="$seed" >"$log" 2>&1; then
    cat "$log"
    echo "fuzz: FAILED in round $((rounds + 1)) (--hypothesis-seed=$seed)"
    exit 1
  fi
  rounds=$((rounds + 1)) last=$((SECONDS - round_start))
  echo "fuzz: round $rounds (seed $seed): $(tail -1 "$log")"
done
echo "fuzz: $functions functions x $per_round examples x $rounds rounds = $((functions * per_round * rounds)) examples in $((SECONDS - start)) s"
