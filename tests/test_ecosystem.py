"""posenc among its neighbours: PyTorch and JAX arrays without copies, bfloat16 rounded once,
threadpoolctl, the type stubs, one version.

Every public function is listed once in CASES (a public name missing there fails the
suite); a case whose peer library is not installed is skipped (a failure under
POSENC_REQUIRE_PEERS=1, as in CI).
"""

from __future__ import annotations

import ast
import importlib.metadata
import math
import re
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional

import numpy as np
import pytest

import posenc
from posenc import _backend, _checks
from posenc._checks import BFLOAT16

from conftest import requires_native
from helpers import optional

torch = optional("torch")
jax = optional("jax")
jnp = optional("jax.numpy")
if jax is not None:
    jax.config.update("jax_enable_x64", True)  # keep float64/int64 arrays as they are

requires_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
requires_jax = pytest.mark.skipif(jax is None, reason="JAX not installed")
requires_bf16 = pytest.mark.skipif(BFLOAT16 is None, reason="ml_dtypes not installed")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 5, 3, 8))  # [batch, seq, heads, head_dim]
X3 = RNG.standard_normal((2, 5, 8))  # [batch, seq, dim]
TABLE = RNG.standard_normal((16, 8))  # [positions, dim]
SCORES = RNG.standard_normal((2, 4, 5, 6))  # [batch, heads, q, k]
BUCKET_TABLE = RNG.standard_normal((32, 4))  # [num_buckets, heads]
POS = np.array([3, 0, 7, 2, 9], np.int64)


class Case(NamedTuple):
    call: Callable[[Callable[[np.ndarray], Any]], Any]  # given a converter for array inputs
    out: Optional[Callable[[], np.ndarray]] = None  # the out= template, when the function takes out=
    out_call: Optional[Callable[[Callable[[np.ndarray], Any], Any], Any]] = None  # call(conv, out)


def f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32)


CASES: Dict[str, Case] = {
    "sinusoidal": Case(lambda c: posenc.sinusoidal(c(POS), 8),
                       lambda: np.zeros((5, 8), np.float32), lambda c, o: posenc.sinusoidal(c(POS), 8, out=o)),
    "add_sinusoidal": Case(lambda c: posenc.add_sinusoidal(c(f32(X3)), offset=2),
                           lambda: f32(X3), lambda c, o: posenc.add_sinusoidal(o, offset=2, out=o)),
    "sinusoidal_2d": Case(lambda c: posenc.sinusoidal_2d(3, 4, 6),
                          lambda: np.zeros((3, 4, 6), np.float32), lambda c, o: posenc.sinusoidal_2d(3, 4, 6, out=o)),
    "sinusoidal_3d": Case(lambda c: posenc.sinusoidal_3d(2, 3, 4, 6),
                          lambda: np.zeros((2, 3, 4, 6), np.float32),
                          lambda c, o: posenc.sinusoidal_3d(2, 3, 4, 6, out=o)),
    "concat_positional": Case("concat_positional",
                              lambda c: posenc.concat_positional(c(f32(X3)), c(f32(TABLE[:5, :4])))),
    "apply_rope": Case(lambda c: posenc.apply_rope(c(f32(X)), c(POS)),
                       lambda: f32(X), lambda c, o: posenc.apply_rope(o, c(POS), out=o)),
    "apply_rope_qk": Case(lambda c: posenc.apply_rope_qk(c(f32(X)), c(f32(X[..., :1, :])), c(POS))),
    "rope_cos_sin": Case(lambda c: posenc.rope_cos_sin(c(POS), 8)),
    "rope_inv_freq": Case(lambda c: posenc.rope_inv_freq(8)),
    "positions_from_cu_seqlens": Case("positions_from_cu_seqlens",
                                      lambda c: posenc.positions_from_cu_seqlens(c(np.array([0, 3, 7], np.int64)))),
    "relative_positions": Case(lambda c: posenc.relative_positions(4, 6, offset=2)),
    "t5_bucket": Case(lambda c: posenc.t5_bucket(c(np.arange(-200, 200, 7, dtype=np.int64)))),
    "t5_buckets": Case(lambda c: posenc.t5_buckets(5, 6)),
    "t5_bias": Case(lambda c: posenc.t5_bias(c(f32(BUCKET_TABLE)), 5, 6),
                    lambda: np.zeros((4, 5, 6), np.float32),
                    lambda c, o: posenc.t5_bias(c(f32(BUCKET_TABLE)), 5, 6, out=o)),
    "add_t5_bias": Case(lambda c: posenc.add_t5_bias(c(f32(SCORES)), c(f32(BUCKET_TABLE))),
                        lambda: f32(SCORES), lambda c, o: posenc.add_t5_bias(o, c(f32(BUCKET_TABLE)), out=o)),
    "alibi_slopes": Case(lambda c: posenc.alibi_slopes(6)),
    "alibi_bias": Case(lambda c: posenc.alibi_bias(4, 5, 6, slopes=c(f32(np.linspace(0.1, 1, 4)))),
                       lambda: np.zeros((4, 5, 6), np.float32), lambda c, o: posenc.alibi_bias(4, 5, 6, out=o)),
    "add_alibi": Case(lambda c: posenc.add_alibi(c(f32(SCORES))),
                      lambda: f32(SCORES), lambda c, o: posenc.add_alibi(o, out=o)),
    "clipped_relative_positions": Case("clipped_relative_positions",
                                       lambda c: posenc.clipped_relative_positions(5, 6, 2)),
    "relative_embeddings": Case(lambda c: posenc.relative_embeddings(c(f32(TABLE[:5])), 5, 6, 2)),
    "embedding_lookup": Case(lambda c: posenc.embedding_lookup(c(f32(TABLE)), c(POS)),
                             lambda: np.zeros((5, 8), np.float32),
                             lambda c, o: posenc.embedding_lookup(c(f32(TABLE)), c(POS), out=o)),
    "embedding_add": Case(lambda c: posenc.embedding_add(c(f32(X3)), c(f32(TABLE)), c(POS)),
                          lambda: f32(X3), lambda c, o: posenc.embedding_add(o, c(f32(TABLE)), c(POS), out=o)),
    "embedding_grad": Case(lambda c: posenc.embedding_grad(c(f32(X3)), c(np.stack([POS, POS])), 16)),
    "resize_table": Case(lambda c: posenc.resize_table(c(f32(TABLE)), 24)),
    "resize_table_2d": Case(lambda c: posenc.resize_table_2d(c(f32(TABLE.reshape(4, 4, 8))), 6, 5)),
}


def as_numpy(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(as_numpy(r) for r in result)
    if torch is not None and isinstance(result, torch.Tensor):
        return result.numpy()
    return np.asarray(result) if not isinstance(result, (float, int)) else result


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
        return
    a, b = as_numpy(a), as_numpy(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def to_torch(a: np.ndarray) -> Any:
    return torch.from_numpy(np.array(a))


def to_jax(a: np.ndarray) -> Any:
    return jnp.asarray(a)


def test_every_public_function_has_a_case():
    """A family that lands with a function not listed in CASES fails here: add its case."""
    functions = {n for n in posenc.__all__ if callable(getattr(posenc, n)) and not n[0].isupper()}
    plumbing = {"get_backend", "set_backend", "get_num_threads", "set_num_threads", "info", "sinusoidal_frequencies"}
    assert functions - plumbing - set(CASES) == set()


# --- PyTorch and JAX inputs ---------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_cpu_tensors_as_inputs(name, isa):
    case = CASES[name]
    assert_same(case.call(to_torch), case.call(np.array))


@requires_jax
@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_cpu_arrays_as_inputs(name, isa):
    case = CASES[name]
    assert_same(case.call(to_jax), case.call(np.array))


@requires_torch
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.out is not None))
def test_torch_out_is_written_in_place(name, isa):
    case = CASES[name]
    assert case.out is not None and case.out_call is not None
    expected = case.out_call(np.array, case.out())
    t = torch.from_numpy(case.out())
    pointer = t.data_ptr()
    result = case.out_call(to_torch, t)
    assert result is t and t.data_ptr() == pointer
    np.testing.assert_array_equal(t.numpy(), expected)


@requires_torch
def test_inputs_are_viewed_not_copied():
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)[:, ::2]  # strided too
    view = _checks.as_array(t, "x")
    assert np.shares_memory(view, t.numpy()) and view.strides == t.numpy().strides
    if BFLOAT16 is not None:
        b = torch.zeros(3, 4, dtype=torch.bfloat16)
        bview = _checks.as_array(b, "x")
        assert bview.dtype == BFLOAT16 and bview.ctypes.data == b.data_ptr()
    if jax is not None:
        j = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4)
        jview = _checks.as_array(j, "x")
        assert jview.ctypes.data == j.unsafe_buffer_pointer()
        assert np.shares_memory(jview, np.from_dlpack(j))


@requires_torch
@requires_bf16
def test_torch_bfloat16_out_in_place(isa):
    t = torch.zeros(2, 5, 8, dtype=torch.bfloat16)
    view = t.view(torch.int16).numpy().view(BFLOAT16)
    expected = posenc.add_sinusoidal(np.zeros((2, 5, 8), BFLOAT16), offset=3)
    result = posenc.add_sinusoidal(t, offset=3, out=t)
    assert result is t
    np.testing.assert_array_equal(view.view(np.uint16), expected.view(np.uint16))


@requires_torch
def test_torch_tensor_that_requires_grad_is_refused_with_a_clear_error():
    t = torch.zeros(2, 4, requires_grad=True)
    with pytest.raises(TypeError, match="x"):
        posenc.add_sinusoidal(t)


# --- bfloat16: rounded once, in the kernel ----------------------------------------------------

def rne_bf16(v: float) -> float:
    """Round a finite, normal float64 to bfloat16 (8 significant bits), ties to even, exactly."""
    if v == 0:
        return v
    m, e = math.frexp(v)  # v = m·2^e, 0.5 <= |m| < 1; m·2^8 is exact
    return math.ldexp(round(m * 256), e - 8)  # Python's round() is ties-to-even


@requires_bf16
@pytest.mark.parametrize("scale", [1.0, 1 + 2**-8 + 2**-30, 1.5, 1.25, 1 + 2**-12 + 2**-40, 1.5 + 3 * 2**-40, -0.75])
def test_bfloat16_is_rounded_once_from_float64(scale, isa):
    """``scale·x + PE(0)`` with PE(0) = (0, 1, 0, 1, ...) is exact in float64 for these scales; the
    bfloat16 result must be its correct rounding. 1 + 2^-8 + 2^-30 catches rounding through
    float32 (which gives 1, not 1 + 2^-7); 1.5 and 1.25 make many exact ties."""
    values = np.concatenate([np.arange(128, 256), -np.arange(128, 256)]) / 128.0  # every bf16 in ±[1, 2)
    x = values.astype(BFLOAT16).reshape(1, -1, 2)  # [1, seq, 2]: one (sin, cos) pair per row
    y = posenc.add_sinusoidal(x, positions=np.zeros(x.shape[1]), scale=scale)
    exact = scale * x.astype(np.float64) + np.array([0.0, 1.0])
    expected = np.vectorize(rne_bf16)(exact)
    nonzero = np.abs(exact[exact != 0])
    ties = np.sum(nonzero / 2.0 ** np.floor(np.log2(nonzero)) * 128 % 1 == 0.5)  # halfway between two bf16s
    np.testing.assert_array_equal(y.astype(np.float64), expected)
    if scale in (1.5, 1.25):
        assert ties > 40  # the case does exercise ties-to-even


def _bf16_grid(n: int, seed: int, scale: float = 1.0) -> np.ndarray:
    """Every bfloat16 value in ±[1, 2) times ``scale`` (a power of two), shuffled, cut to ``n``."""
    values = np.concatenate([np.arange(128, 256), -np.arange(128, 256)]) / 128.0 * scale
    return np.random.default_rng(seed).permutation(np.resize(values, n)).astype(BFLOAT16)


@requires_bf16
@pytest.mark.parametrize("name", ["embedding_add", "add_alibi", "add_t5_bias"])
def test_bfloat16_sums_are_rounded_once(name, isa):
    """Sums of two bfloat16 values (or of one and slope·distance) are exact in float64 and land
    halfway between bfloat16 neighbours often: the result must be their ties-to-even rounding."""
    heads, q, k, dim = 4, 8, 16, 2 * 128
    if name == "embedding_add":
        x, table = _bf16_grid(3 * 16 * dim, 1).reshape(3, 16, dim), _bf16_grid(16 * dim, 2, 0.5).reshape(16, dim)
        positions = np.arange(16)[::-1].copy()
        got = posenc.embedding_add(x, table, positions)
        exact = x.astype(np.float64) + table.astype(np.float64)[positions]
    elif name == "add_alibi":
        scores = _bf16_grid(2 * heads * q * k, 3).reshape(2, heads, q, k)
        slopes = np.array([0.75, 0.375, 1.5, 0.625])  # exact in float64 and bfloat16
        got = posenc.add_alibi(scores, slopes=slopes, offset=k - q)
        exact = scores.astype(np.float64) + slopes[:, None, None] * (np.arange(k) - (k - q + np.arange(q))[:, None])
    else:
        scores = _bf16_grid(2 * heads * q * k, 4).reshape(2, heads, q, k)
        table = _bf16_grid(32 * heads, 5, 0.25).reshape(32, heads)
        got = posenc.add_t5_bias(scores, table)
        exact = scores.astype(np.float64) + table.astype(np.float64)[posenc.t5_buckets(q, k)].transpose(2, 0, 1)
    expected = np.vectorize(rne_bf16)(exact)
    np.testing.assert_array_equal(got.astype(np.float64), expected)
    nonzero = np.abs(exact[exact != 0])
    assert np.sum(nonzero / 2.0 ** np.floor(np.log2(nonzero)) * 128 % 1 == 0.5) > 50  # many exact ties


@requires_native
@requires_bf16
@pytest.mark.parametrize("name", ["sinusoidal", "add_sinusoidal", "apply_rope", "alibi_bias", "embedding_add",
                                  "add_alibi", "t5_bias"])
def test_bfloat16_makes_no_float32_temporary(name, native_backend):
    """Peak Python-heap memory of a bfloat16 call writing into ``out`` stays far below a float32
    copy of the array (NumPy reports its buffers to tracemalloc)."""
    n, dim = 4096, 128
    calls: Dict[str, Callable[[np.ndarray], Any]] = {
        "sinusoidal": lambda o: posenc.sinusoidal(n, dim, dtype=BFLOAT16, out=o),
        "add_sinusoidal": lambda o: posenc.add_sinusoidal(o, out=o),
        "apply_rope": lambda o: posenc.apply_rope(o.reshape(n, 1, dim), out=o.reshape(n, 1, dim)),
        "alibi_bias": lambda o: posenc.alibi_bias(8, 512, 128, dtype=BFLOAT16, out=o.reshape(8, 512, 128)),
        "add_alibi": lambda o: posenc.add_alibi(o.reshape(8, 512, 128), out=o.reshape(8, 512, 128)),
        "embedding_add": lambda o: posenc.embedding_add(o, table, np.arange(n), out=o),
        "t5_bias": lambda o: posenc.t5_bias(np.ones((32, 8), BFLOAT16), 512, 128, out=o.reshape(8, 512, 128)),
    }
    table = np.ones((n, dim), BFLOAT16)
    out = np.zeros((n, dim), BFLOAT16)
    calls[name](out)  # warm caches (frequencies, scratch)
    tracemalloc.start()
    try:
        calls[name](out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < out.size * 4 // 8, f"{name}: {peak} bytes allocated for a {out.nbytes}-byte bfloat16 array"


# --- threads ----------------------------------------------------------------------------------

@requires_native
def test_threadpoolctl_lists_and_limits_posenc_openmp_beside_blas(native_backend):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not _backend.native.have_openmp():
        pytest.skip("built without OpenMP")
    apis = {pool["user_api"] for pool in threadpoolctl.threadpool_info()}
    assert "openmp" in apis
    with threadpoolctl.threadpool_limits(limits=1):  # every pool at once, as users write it
        assert posenc.get_num_threads() == 1
        reference = posenc.sinusoidal(20000, 64)
    np.testing.assert_array_equal(posenc.sinusoidal(20000, 64), reference)  # results do not depend on threads


# --- typing and packaging ---------------------------------------------------------------------

def _pybind_parameters(doc: str) -> List[str]:
    signature = doc.splitlines()[0]
    inside = signature[signature.index("(") + 1: signature.rindex(") ->")]
    names, depth, current = [], 0, ""
    for ch in inside + ",":
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            if current.strip():
                names.append(current.split(":")[0].strip())
            current = ""
        else:
            current += ch
    return names


@requires_native
def test_stub_names_every_compiled_function_with_its_parameters():
    stub = Path(posenc.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())
    stubbed = {f.name: [a.arg for a in f.args.args] for f in tree.body if isinstance(f, ast.FunctionDef)}
    compiled = {n: getattr(_backend.native, n) for n in dir(_backend.native) if not n.startswith("_")}
    compiled = {n: f for n, f in compiled.items() if callable(f)}
    assert set(compiled) == set(stubbed), "python/posenc/_native.pyi is out of date: mypy checks calls against it"
    for name, function in compiled.items():
        assert stubbed[name] == _pybind_parameters(function.__doc__), name


def test_one_version_everywhere():
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?\w+)?", posenc.__version__)
    assert importlib.metadata.version("posenc") == posenc.__version__
    if _backend.native is not None:
        assert _backend.native.__version__ == posenc.__version__


def test_package_ships_types():
    here = Path(posenc.__file__).parent
    assert (here / "py.typed").exists() and (here / "_native.pyi").exists()
