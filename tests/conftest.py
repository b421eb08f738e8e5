"""Shared fixtures: every native ISA path, both backends, per-dtype tolerances."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from typing import Iterator, Optional

import pytest
from hypothesis import HealthCheck, settings

import posenc
from posenc import _backend

settings.register_profile("default", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("fuzz", max_examples=20000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

NATIVE = _backend.native is not None

# CI installs every optional package and parity peer, then sets POSENC_REQUIRE_PEERS=1: a test
# that would skip because one is missing fails instead (a failed install must not pass green).
REQUIRE_PEERS = os.environ.get("POSENC_REQUIRE_PEERS") == "1"
# Every optional package some test uses (the extras and .ci/peers.txt).
OPTIONAL = ("ml_dtypes", "matplotlib", "threadpoolctl", "torch", "jax", "transformers", "rotary_embedding_torch",
            "positional_encodings", "diffusers", "dask", "distributed", "zarr")
if REQUIRE_PEERS:
    _missing = [m for m in OPTIONAL if importlib.util.find_spec(m) is None]
    if _missing:
        raise pytest.UsageError(f"POSENC_REQUIRE_PEERS=1 but these optional packages are not installed: {_missing}")
    _importorskip = pytest.importorskip

    def _import_or_fail(modname: str, *args, **kwargs):
        try:
            return _importorskip(modname, *args, **kwargs)
        except pytest.skip.Exception as exc:
            pytest.fail(f"POSENC_REQUIRE_PEERS=1, but {modname} cannot be imported: {exc}", pytrace=False)

    pytest.importorskip = _import_or_fail
# POSENC_ISA=x runs the ISA-parametrised tests on that path only (CI's forced-ISA stages);
# POSENC_BACKEND=reference runs them on the NumPy twin instead, against the same closed forms.
_FORCED = os.environ.get("POSENC_ISA", "").strip().lower()
if os.environ.get("POSENC_BACKEND", "").strip().lower() == "reference":
    ISAS = ["reference"]
else:
    ISAS = ([_FORCED] if _FORCED else list(_backend.native.available_isas())) if NATIVE else []

requires_native = pytest.mark.skipif(not NATIVE, reason="the compiled core is not available")


@contextlib.contextmanager
def using(backend: str, isa: Optional[str] = None) -> Iterator[None]:
    """Run a block on ``backend`` (and, for native, on ``isa``), restoring both and the default thread count."""
    previous_backend = posenc.get_backend()
    previous_isa = _backend.native.active_isa() if NATIVE else None
    posenc.set_backend(backend)
    if isa is not None:
        _backend.native.select_isa(isa)
    try:
        yield
    finally:
        if previous_isa is not None:
            _backend.native.select_isa(previous_isa)
        posenc.set_backend(previous_backend)
        posenc.set_num_threads(None)


@pytest.fixture(params=ISAS or [pytest.param(None, marks=pytest.mark.skip(reason="no compiled core"))])
def isa(request):
    """Run the test once per ISA this CPU supports on the native backend (or on the reference, see above)."""
    if request.param == "reference":
        with using("reference"):
            yield request.param
    else:
        with using("native", request.param):
            yield request.param


@pytest.fixture(params=[i for i in ISAS if i != "reference"]
                or [pytest.param(None, marks=pytest.mark.skip(reason="native-only: no compiled core, "
                                                                     "or POSENC_BACKEND=reference"))])
def native_isa(request):
    """Like ``isa``, but never the reference: for tests that compare native results with
    ``posenc.reference`` (on the reference backend they would compare the reference with itself)."""
    with using("native", request.param):
        yield request.param


@pytest.fixture(params=["native", "reference"])
def backend(request):
    """Run the test on each backend (native skipped without the compiled core)."""
    if request.param == "native" and not NATIVE:
        pytest.skip("the compiled core is not available")
    with using(request.param):
        yield request.param


@pytest.fixture
def native_backend():
    """Force the native backend (skips without the compiled core)."""
    if not NATIVE:
        pytest.skip("the compiled core is not available")
    with using("native"):
        yield


@pytest.fixture
def reference_backend():
    with using("reference"):
        yield


def pytest_runtest_setup(item):
    """Import the peers a test is marked as needing (helpers.needs): skip it when one is missing,
    fail it under POSENC_REQUIRE_PEERS=1."""
    from helpers import load_peer

    for mark in item.iter_markers("needs"):
        for peer in mark.args:
            try:
                load_peer(peer)
            except ImportError as exc:
                message = f"needs {peer._peer_name}: {exc}"
                if REQUIRE_PEERS:
                    pytest.fail(f"POSENC_REQUIRE_PEERS=1, but {message}", pytrace=False)
                pytest.skip(message)


# tests/mutation.py runs a family's tests with one kernel made wrong on purpose.
_MUTANT = os.environ.get("POSENC_MUTANT")
_mutant_calls = None
if _MUTANT:
    import mutation

    _mutant_calls = mutation.apply(_MUTANT)


# CI runs the suite twice in one venv: as the README says (no optional package), then with every
# optional package and peer added. The second run needs only what the first did not pass:
# POSENC_PASSED_LOG=<file> makes a run write the ids of the tests that passed, and
# POSENC_RERUN_FROM=<file> makes a run leave those out, so that what skipped (or was not even
# collected, as bfloat16 cases are without ml_dtypes) for want of an optional package runs.
_PASSED_LOG = os.environ.get("POSENC_PASSED_LOG")
_RERUN_FROM = os.environ.get("POSENC_RERUN_FROM")
_passed = set()


def pytest_runtest_logreport(report):
    if _PASSED_LOG and report.when == "call" and report.passed:
        _passed.add(report.nodeid)


def pytest_collection_modifyitems(config, items):
    if not _RERUN_FROM:
        return
    with open(_RERUN_FROM) as f:
        done = set(f.read().splitlines())
    if not done:
        raise pytest.UsageError(f"POSENC_RERUN_FROM={_RERUN_FROM} lists no passed test")
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
    items[:] = [item for item in items if item.nodeid not in done]


def pytest_sessionfinish(session, exitstatus):
    if _mutant_calls is not None and _mutant_calls() == 0:
        print(f"\nmutant never called: {_MUTANT}")
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    # Under pytest-xdist the controller sees every worker's reports: it alone writes the log.
    if _PASSED_LOG and not hasattr(session.config, "workerinput"):
        with open(_PASSED_LOG, "w") as f:
            f.write("".join(f"{nodeid}\n" for nodeid in sorted(_passed)))
