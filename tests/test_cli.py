"""The ``posenc`` command line: every command as a user runs it, and the numbers ``compare`` computes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import numpy as np
import pytest

import posenc
from posenc import __main__ as cli
from posenc import _compare

from helpers import python


def posenc_cmd(*args: str, env: Optional[dict] = None, **kwargs) -> subprocess.CompletedProcess:
    return python("-m", "posenc", *args, **kwargs, **(env or {}))


def test_help_lists_every_command():
    r = posenc_cmd("--help")
    assert r.returncode == 0
    for command in ("info", "table", "plot", "compare", "bench"):
        assert command in r.stdout


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("posenc")
    if not script.exists():
        pytest.skip("no console script next to this interpreter")
    r = subprocess.run([str(script), "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["version"] == posenc.__version__


@pytest.mark.parametrize("kind", sorted(cli.TABLES))
def test_table_writes_every_kind(kind, tmp_path, capsys):
    target = tmp_path / f"{kind}.npy"
    code = cli.main(["table", kind, "--length", "12", "--dim", "8", "--heads", "4", "-o", str(target)])
    assert code == 0
    table = np.load(target)
    assert f"wrote {target}" in capsys.readouterr().out
    shapes = {"sinusoidal": (12, 8), "sinusoidal_2d": (12, 12, 8), "sinusoidal_3d": (8, 12, 12, 8),
              "rope": (2, 12, 4), "rope_inv_freq": (4,), "alibi": (4, 12, 12), "t5_buckets": (12, 12),
              "relative": (12, 12), "learned": (12, 8)}
    assert table.shape == shapes[kind]


def test_table_values_and_dtypes(tmp_path):
    target = tmp_path / "pe.npy"
    assert cli.main(["table", "sinusoidal", "--length", "16", "--dim", "8", "--split", "--dtype", "float64",
                     "-o", str(target)]) == 0
    np.testing.assert_array_equal(np.load(target), posenc.sinusoidal(16, 8, interleaved=False, dtype=np.float64))
    pytest.importorskip("ml_dtypes")
    assert cli.main(["table", "sinusoidal", "--length", "4", "--dim", "8", "--dtype", "bfloat16",
                     "-o", str(target)]) == 0
    assert np.load(target).dtype.itemsize == 2  # saved as bfloat16 (ml_dtypes' |V2 on disk)


def test_compare_computes_the_properties():
    settings = _compare.Settings(length=128, dim=32, heads=4)
    results = {r.name: r for r in _compare.compare(settings)}
    sin, split, tri = results["sinusoidal"], results["sinusoidal split"], results["triangle waves"]
    # Sines and cosines: a fixed rotation per frequency shifts every position (Vaswani's argument).
    assert sin.shift_residual < 1e-9 and split.shift_residual < 1e-9
    # Triangle waves keep the frequencies but lose the linear shift.
    assert tri.shift_residual > 1e-3
    # Both layouts hold the same numbers in another order: same distances and profile.
    assert sin.min_dist == pytest.approx(split.min_dist) and sin.min_dist > 0.1
    np.testing.assert_allclose(sin.similarity, split.similarity, atol=1e-12)
    # Translation invariant encodings behave beyond L as within.
    assert sin.defined_beyond and sin.drift < 1e-9
    assert tri.drift > 1e-3
    # The profile is an independent closed form: mean cos(d·ω_i) over the frequencies.
    omega = 10000.0 ** (-np.arange(0, 32, 2) / 32)
    np.testing.assert_allclose(sin.similarity[:50], [np.mean(np.cos(d * omega)) for d in range(50)], atol=1e-12)
    learned = results["learned (init)"]
    assert not learned.defined_beyond and "IndexError" in learned.beyond_note
    assert learned.shift_residual > 0.5  # a random table has no linear shift
    rope = results["RoPE"]
    assert rope.shift_residual < 1e-6 and rope.drift < 1e-6
    alibi = results["ALiBi"]
    assert alibi.decays and alibi.shift_residual == 0 and alibi.drift == 0
    # b(d) = -slopes·d: adjacent distances differ by |slopes|, the mean norm is |slopes|·mean(d).
    assert alibi.min_dist == pytest.approx(2 / (128 - 1), rel=1e-5)
    assert alibi.unseen == pytest.approx(3 * 128 / ((128 - 1) / 2), rel=1e-5)  # d = 4L-1 lies 3L past d = L-1
    t5 = results["T5 (init)"]
    assert t5.min_dist == 0  # distances in one log bucket share a bias
    assert t5.shift_residual == 0 and t5.drift == 0
    deberta = results["DeBERTa (init)"]
    assert deberta.shift_residual == 0 and deberta.drift == 0  # a function of the distance only
    assert deberta.min_dist > 0  # L = 128 <= bucket_size // 2: every distance seen has its own row
    assert deberta.min_dist_beyond == 0  # far distances share log buckets


@pytest.mark.slow
def test_compare_prints_a_table_and_json():
    r = posenc_cmd("compare", "--length", "64", "--dim", "16")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("sinusoidal ") for line in lines)
    assert any(line.startswith("triangle waves") for line in lines)
    for name in ("learned (init)", "RoPE", "ALiBi", "T5 (init)"):
        assert any(line.startswith(name) for line in lines)
    r = posenc_cmd("compare", "--length", "64", "--dim", "16", "--json", "--only", "sinusoidal")
    data = json.loads(r.stdout)
    assert {row["name"] for row in data["results"]} == {"sinusoidal", "sinusoidal split"}
    md = posenc_cmd("compare", "--length", "64", "--dim", "16", "--markdown", "--only", "triangle").stdout
    assert "| triangle waves |" in md and "|---|" in md


@pytest.mark.slow
def test_plot_writes_pngs(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    written: List[Path] = []
    for kind in ("sinusoidal", "alibi", "rope", "learned", "t5", "triangle"):
        code = cli.main(["plot", kind, "--length", "64", "--dim", "16", "-o", str(tmp_path / f"{kind}.png")])
        out, err = capsys.readouterr()
        assert code == 0, err
        paths = [Path(line.split(" ", 1)[1]) for line in out.splitlines() if line.startswith("wrote ")]
        assert [p.name for p in paths] == [f"{kind}_{f}.png" for f in ("heatmap", "similarity", "spectrum")][
            : 3 if kind == "rope" else 2]
        written += paths
    assert cli.main(["plot", "all", "--figure", "similarity", "--length", "64", "-o", str(tmp_path / "all.png")]) == 0
    written.append(tmp_path / "all.png")
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path):
    code = "import sys; sys.modules['matplotlib'] = None; from posenc.__main__ import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code, "plot", "sinusoidal", "-o", str(tmp_path / "x.png")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "pip install 'posenc[plot]'" in r.stderr
    assert not list(tmp_path.iterdir())


def test_plot_refuses_a_spectrum_for_a_non_rotary_kind(tmp_path):
    r = posenc_cmd("plot", "sinusoidal", "--figure", "spectrum", "-o", str(tmp_path / "x.png"))
    assert r.returncode == 2 and "rotary" in r.stderr


@pytest.mark.slow
def test_bench_runs_and_reports_every_column():
    r = posenc_cmd("bench", "--quick", "--repeat", "1", "--only", "sinusoidal [")
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()[1:3]
    for column in ("posenc ms", "numpy ms", "torch ms", "GB/s", "of ceiling"):
        assert column in header
    assert "% of fill" in row


@pytest.mark.slow
def test_bench_alternate_dtypes_prints_the_dtype_table():
    r = posenc_cmd("bench", "--alternate-dtypes", "--quick", "--repeat", "1", "--only", "add_alibi [",
                   "--dtype", "float32,float16")
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()[-2:]
    assert "alternated call by call" in r.stdout and header.split()[-2:] == ["ms", "float16"]
    assert row.startswith("add_alibi [") and row.endswith("x")
    r = posenc_cmd("bench", "--alternate-dtypes", "--isa", "all")
    assert r.returncode == 2 and "--isa all" in r.stderr


@pytest.mark.slow
def test_bench_progress_goes_to_stderr():
    import io

    from posenc import _bench

    out = io.StringIO()
    rows = _bench.run(quick=True, repeat=1, only="sinusoidal [", stream=out, progress=True)
    assert rows and all(row["posenc_s"] > 0 for row in rows)
    assert "\r" not in out.getvalue()  # the table stays clean; the progress line is on stderr


def test_bench_times_posenc_apart_from_every_baseline(monkeypatch):
    """posenc and its ceiling share their rotation with no baseline: NumPy's long one-thread calls
    leave posenc's workers idle before its next call, PyTorch's leave its own spinning."""
    import posenc._bench as bench

    seen = []

    def record(groups, repeat, reset=None, now=None):
        seen.append([set(g) for g in groups])
        return {name: 1e-3 for g in groups for name in g}

    monkeypatch.setattr(bench, "measure_by_runtime", record)
    bench.run(quick=True, only="add_sinusoidal", stream=io.StringIO(), progress=False, small_calls=False)
    assert seen
    for groups in seen:
        ours = [g for g in groups if "posenc" in g]
        assert ours == [{"posenc", "ceiling"}]
        assert any("base numpy" in g for g in groups)


@pytest.mark.skipif(not hasattr(posenc._backend.native, "memory_pass"), reason="needs the native core")
def test_memory_ceilings_reach_every_word():
    """The ceilings' passes (a fill; a read-modify-write and a read in blocks the threads claim) reach
    every word once, on buffers of a block and less, of many blocks, and of a part block more, at 1 and 2
    threads."""
    memory_pass = posenc._backend.native.memory_pass
    rng = np.random.default_rng(0)
    try:
        for threads in (1, 2):
            posenc.set_num_threads(threads)
            for words in (1, 1000, (1 << 17) + 1, 3 << 18):  # 1 MiB blocks hold 2^17 words
                data = rng.integers(0, 2**63, words, dtype=np.uint64)
                original = data.copy()
                memory_pass(data, "touch", 0xF0F0F0F0F0F0F0F0)
                np.testing.assert_array_equal(data, original ^ np.uint64(0xF0F0F0F0F0F0F0F0))
                memory_pass(data, "touch")
                np.testing.assert_array_equal(data, original ^ np.uint64(0xF0F0F0F0F0F0F0F0))
                xor = int(np.bitwise_xor.reduce(data))
                assert memory_pass(data, "read") == xor
                assert memory_pass(data, "read", 0xF0F0) == xor ^ 0xF0F0
                np.testing.assert_array_equal(data, original ^ np.uint64(0xF0F0F0F0F0F0F0F0))  # read only
                memory_pass(data, "fill", 7)
                assert (data == 7).all()
                memory_pass(data, "fill")
                assert not data.any()
    finally:
        posenc.set_num_threads(None)


def test_bench_times_each_threading_runtime_apart():
    """Functions of one runtime interleave among themselves, and no call of one group falls between
    another group's: PyTorch's spinning workers must not steal the cores of posenc's next call."""
    from posenc._bench.timing import measure_by_runtime

    calls = []

    def recorder(name):
        return lambda: calls.append(name)

    best = measure_by_runtime([{"posenc": recorder("p"), "ceiling": recorder("c")}, {"torch": recorder("t")}, {}],
                              repeat=3)
    assert set(best) == {"posenc", "ceiling", "torch"} and all(t >= 0 for t in best.values())
    # a warm-up call each, then the rounds, each starting one function further along
    assert "".join(calls) == "pc" + "pc" + "cp" + "pc" + "t" + "t" * 3


def test_bench_alternates_the_dtypes_of_each_case(monkeypatch):
    """--alternate-dtypes times a case's dtypes in one rotation, each restored by its own reset, and
    prints their ratios to float32 from that rotation."""
    import posenc._bench as bench

    seen = []

    def record(fns, repeat, reset=None, now=None):
        seen.append((set(fns), reset))
        return {d: {"float32": 2e-3, "float16": 3e-3}.get(d, 1e-3) for d in fns}

    monkeypatch.setattr(bench, "measure", record)
    out = io.StringIO()
    rows = bench.run_dtypes_alternated(quick=True, only="add_alibi [", dtypes=["float32", "float16", "float64"],
                                       stream=out, progress=False)
    assert seen and all(names == {"float32", "float16", "float64"} for names, _ in seen)
    for names, reset in seen:  # in-place cases: every dtype restores its own operand
        assert isinstance(reset, dict) and set(reset) == names and all(callable(r) for r in reset.values())
    assert {(r["dtype"], r["posenc_s"]) for r in rows} == {("float32", 2e-3), ("float16", 3e-3), ("float64", 1e-3)}
    table = out.getvalue()
    assert "alternated call by call" in table and "1.50x" in table and "0.50x" in table


def test_measure_restores_each_function_with_its_own_reset_and_rotates_the_order():
    """Each call follows its own reset, and each round starts one function further along (no
    function always follows the same one)."""
    from posenc._bench.timing import measure

    calls = []
    fns = {name: (lambda n=name: calls.append(n)) for name in "abc"}
    resets = {name: (lambda n=name: calls.append(n.upper())) for name in "abc"}
    measure(fns, repeat=3, reset=resets, pause=0)
    assert "".join(calls) == "AaBbCc" + "AaBbCc" + "BbCcAa" + "CcAaBb"  # a warm-up call each, then three rounds


@pytest.mark.skipif(not hasattr(posenc._backend.native, "memory_pass"), reason="needs the native core")
def test_read_alloc_ceiling_reads_the_input_and_allocates_the_result():
    """``read+alloc`` (functions returning a new array from a larger input, as embedding_grad) reads every
    word of the input, leaves it as it was, and allocates and fills the result's bytes."""
    from posenc._bench.timing import ceiling

    source = np.random.default_rng(1).integers(0, 2**63, 3 << 17, dtype=np.uint64)
    original = source.copy()
    read, _ = ceiling("read+alloc", (source.view(np.float32), 1 << 20))()
    assert read == int(np.bitwise_xor.reduce(original))
    np.testing.assert_array_equal(source, original)
    with pytest.raises(ValueError, match="C-contiguous"):
        ceiling("read+alloc", (source[::2], 1 << 20))
