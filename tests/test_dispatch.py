"""Package plumbing: ISA selection, backends, threads, fork safety, the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import posenc
from posenc import _backend

from conftest import requires_native
from helpers import run_python


def test_info_describes_the_runtime():
    info = posenc.info()
    assert info["version"] == posenc.__version__
    assert info["backend"] in ("native", "reference")
    if info["native"]:
        assert info["isa"] in info["isas_available"]
        assert info["isas_available"][0] == "baseline"
        assert info["threads"] >= 1
    # AVX512_BF16's conversions run on the avx512 path only.
    assert info["bfloat16_instructions"] in ((False, True) if info["isa"] == "avx512" else (False,))


@requires_native
def test_isa_forcing_each_available_path():
    for isa in _backend.native.available_isas():
        r = run_python("import posenc; print(posenc.info()['isa'])", POSENC_ISA=isa)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == isa


@requires_native
def test_isa_forcing_refuses_what_the_cpu_lacks():
    missing = [isa for isa in ("avx2", "avx512") if isa not in _backend.native.available_isas()]
    for isa in missing:
        r = run_python("import posenc", POSENC_ISA=isa)
        assert r.returncode != 0
        assert "not supported by this CPU" in r.stderr
    r = run_python("import posenc", POSENC_ISA="sse9")
    assert r.returncode != 0 and "POSENC_ISA must be one of" in r.stderr


def test_missing_core_falls_back_with_one_warning():
    r = run_python(
        """
        import sys, warnings
        sys.modules["posenc._native"] = None  # makes the import fail
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import posenc
        print(posenc.get_backend(), sum("reference backend" in str(w.message) for w in caught))
        print(posenc.sinusoidal(3, 4).shape)
        try:
            posenc.set_backend("native")
        except RuntimeError as e:
            print("refused")
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["reference", "1", "(3,", "4)", "refused"]


def test_backend_selection():
    previous = posenc.get_backend()
    try:
        posenc.set_backend("reference")
        assert posenc.get_backend() == "reference"
        with pytest.raises(ValueError, match="backend"):
            posenc.set_backend("cuda")
    finally:
        posenc.set_backend(previous)
    r = run_python("import posenc; print(posenc.get_backend())", POSENC_BACKEND="reference")
    assert r.stdout.strip() == "reference"
    r = run_python("import posenc", POSENC_BACKEND="gpu")
    assert r.returncode != 0 and "POSENC_BACKEND" in r.stderr


def test_thread_controls(native_backend):
    try:
        posenc.set_num_threads(1)
        assert posenc.get_num_threads() == 1
        posenc.set_num_threads(3)
        assert posenc.get_num_threads() == 3
    finally:
        posenc.set_num_threads(None)
    for bad, exc in [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)]:
        with pytest.raises(exc):
            posenc.set_num_threads(bad)
    r = run_python("import posenc; print(posenc.get_num_threads())", OMP_NUM_THREADS="1")
    assert r.stdout.strip() == "1"


def test_threadpoolctl_limits_posenc(native_backend):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not _backend.native.have_openmp():
        pytest.skip("built without OpenMP")
    before = posenc.get_num_threads()
    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert posenc.get_num_threads() == 1
    assert posenc.get_num_threads() == before


def test_spin_count_is_set_only_while_the_core_loads(monkeypatch):
    seen = []

    def load():
        seen.append(os.environ.get("GOMP_SPINCOUNT"))
        return _backend

    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(_backend, "spin_setting", _backend.spin_setting)  # restored after the test
    assert _backend.load_with_spin_count(load) is _backend
    assert seen == [_backend.SPIN_COUNT] and "GOMP_SPINCOUNT" not in os.environ
    # This load brought no libgomp: one loaded before (posenc's own, here) holds, if any.
    assert _backend.spin_setting == ("libgomp loaded before posenc" if _backend._libgomp_files() else None)

    def failing():
        seen.append(os.environ.get("GOMP_SPINCOUNT"))
        raise ImportError("no core")

    with pytest.raises(ImportError):
        _backend.load_with_spin_count(failing)
    assert seen[-1] == _backend.SPIN_COUNT and "GOMP_SPINCOUNT" not in os.environ

    # The caller's settings win and stay.
    monkeypatch.setenv("GOMP_SPINCOUNT", "5")
    _backend.load_with_spin_count(load)
    assert seen[-1] == "5" and os.environ["GOMP_SPINCOUNT"] == "5"
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    _backend.load_with_spin_count(load)
    assert seen[-1] is None and "GOMP_SPINCOUNT" not in os.environ
    assert _backend.spin_setting == "environment"


@requires_native
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libgomp's setting, measured with getrusage")
def test_idle_workers_stop_spinning_soon_after_a_call():
    # CPU time the process spends while the calling thread sleeps 30 ms
    # after a parallel call: the idle workers' spinning. libgomp's own
    # default spins 8-11 ms after each call. The median of 21 calls: under
    # CI's parallel load a few sleeps also count a worker preempted mid-spin
    # (their sum once read 0.20x libgomp's; medians measured 0.00-0.04x).
    # Under heavier load (CI's sanitizer stage) a spinning worker gets too
    # little CPU to show: libgomp's median once read 0.19 ms. A measurement
    # counts where libgomp's spin shows (1 ms or more); up to three are taken.
    code = """
        import resource, statistics, time, posenc
        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        spent = []
        for _ in range(21):
            posenc.sinusoidal(4096, 256)
            p0, m0 = cpu(), time.thread_time()
            time.sleep(0.03)
            spent.append((cpu() - p0) - (time.thread_time() - m0))
        print(posenc.get_num_threads(), statistics.median(spent), posenc.info()["openmp_spin"])
        """
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.pop("OMP_NUM_THREADS", None)
    for _ in range(3):
        runs = {}
        for name, extra in [("posenc", {}), ("libgomp", {"GOMP_SPINCOUNT": "300000"})]:
            r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                               timeout=120, env={**env, "OMP_NUM_THREADS": "2", **extra})
            assert r.returncode == 0, r.stderr
            threads, spent, setting = r.stdout.split(maxsplit=2)
            if int(threads) < 2 or not _backend.native.have_openmp():
                pytest.skip("no worker threads")
            if setting.strip() == "libgomp loaded before posenc":  # (a NumPy whose BLAS runs on libgomp)
                pytest.skip("libgomp is loaded before posenc here: its own settings hold")
            runs[name] = float(spent)
            assert setting.strip() == {"posenc": "posenc", "libgomp": "environment"}[name]
        if runs["libgomp"] >= 1e-3:
            assert runs["posenc"] < 0.2 * runs["libgomp"], runs
            return
    pytest.skip(f"libgomp's own spin did not show in three measurements (the machine is loaded): {runs}")


@requires_native
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_after_parallel_call_does_not_hang():
    r = run_python(
        """
        import os, posenc
        posenc.sinusoidal(20000, 256)  # starts the OpenMP pool
        pid = os.fork()
        if pid == 0:
            t = posenc.sinusoidal(20000, 256)
            os._exit(0 if t.shape == (20000, 256) else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def test_command_line_info_and_table(tmp_path):
    r = subprocess.run([sys.executable, "-m", "posenc", "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["version"] == posenc.__version__
    target = tmp_path / "pe.npy"
    r = subprocess.run([sys.executable, "-m", "posenc", "table", "sinusoidal", "--length", "16", "--dim", "8",
                        "-o", str(target)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(target), posenc.reference.sinusoidal(16, 8))


@requires_native
def test_default_path_is_the_widest_the_cpu_has():
    """Per-kernel choices live inside each path (a kernel source's vector width), not in the selection."""
    r = run_python("import posenc; print(posenc.info()['isa'], posenc.info()['isas_available'][-1])")
    assert r.returncode == 0, r.stderr
    default, widest = r.stdout.split()
    assert default == widest


@pytest.mark.slow
@requires_native
def test_bench_isa_axis_runs_every_path_in_its_own_process():
    """`posenc bench --isa all` times each path the CPU has, and the default, in child processes."""
    r = subprocess.run([sys.executable, "-m", "posenc", "bench", "--isa", "all", "--quick", "--repeat", "1",
                        "--only", "add_alibi windows", "--dtype", "float32"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    header = next(line for line in r.stdout.splitlines() if line.startswith("case"))
    for path in [*_backend.native.available_isas(), "default"]:
        assert f"{path} ms" in header
    assert any(line.startswith("add_alibi windows") for line in r.stdout.splitlines())


@requires_native
def test_bench_isa_axis_alternated_in_one_process_times_every_path_and_restores_the_choice():
    """`posenc bench --isa alternate`: every path and the default timed in this process, each call on its own
    path; the path chosen before is active again afterwards."""
    import io

    from posenc import _bench

    native = _backend.native
    paths = [*native.available_isas(), "default"]
    chosen = native.active_isa()
    seen = []
    real_select = native.select_isa

    def spy(isa: str) -> None:
        seen.append(isa)
        real_select(isa)

    native.select_isa = spy
    out = io.StringIO()
    try:
        runs = _bench.run_isas_alternated(quick=True, repeat=2, only="add_alibi windows", stream=out, progress=False)
    finally:
        native.select_isa = real_select
    assert list(runs) == paths
    for path, rows in runs.items():
        assert [row["case"] for row in rows] == [runs["default"][0]["case"]]
        assert rows[0]["isa"] == path and rows[0]["posenc_s"] > 0
    # Every timed call selected its own path ("" is posenc's default), and the choice before was restored.
    assert set(seen[:-1]) == {"" if p == "default" else p for p in paths}
    assert seen[-1] == chosen and native.active_isa() == chosen
    text = out.getvalue()
    assert "alternated call by call in one process" in text
    assert any(line.startswith("add_alibi windows") for line in text.splitlines())
