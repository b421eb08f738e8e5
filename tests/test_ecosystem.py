"""posenc among its neighbours: PyTorch and JAX arrays without copies, bfloat16 rounded once,
threadpoolctl, the package's type information, one version (the compiled module's stub: test_native_stub.py).

Every public function is listed once in CASES (a public name missing there fails the
suite); a case whose peer library is not installed is skipped (a failure under
POSENC_REQUIRE_PEERS=1, as in CI).
"""

from __future__ import annotations

import functools
import importlib.metadata
import math
import pickle
import re
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import numpy as np
import pytest

import posenc
from posenc import _backend, _checks
from posenc._checks import BFLOAT16

from conftest import requires_native
from helpers import Peer, have_peer, load_peer, needs
from test_arguments import SPECS

def _jax() -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)  # keep float64/int64 arrays as they are
    return jax


torch = Peer("torch")
jax = Peer("jax", _jax)
jnp = Peer("jax.numpy", lambda: load_peer(jax).numpy)

requires_torch = needs(torch)
requires_jax = needs(jax, jnp)
requires_bf16 = pytest.mark.skipif(BFLOAT16 is None, reason="ml_dtypes not installed")

# Every public function's valid baseline call, from its hostile-input spec (SPECS in tests/test_<family>.py).
PLUMBING = {"get_backend", "set_backend", "get_num_threads", "set_num_threads", "info"}
FUNCTIONS = sorted(n for n in posenc.__all__ if n in SPECS and n not in PLUMBING and not n[0].isupper())


@functools.lru_cache(maxsize=None)
def spec(name: str) -> Any:
    """The spec of posenc.<name>, built once (its baseline arrays are random: every call must see the same)."""
    return SPECS[name]()


def call(name: str, convert: Callable[[np.ndarray], Any], out: Optional[Dict[str, Any]] = None) -> Any:
    """posenc.<name> on its spec's baseline arguments, every array converted by ``convert``.

    ``out`` maps out= arguments to the arrays to write: an out that aliases an input of its
    shape is passed as that input too (in place).
    """
    baseline, outs = spec(name).baseline, spec(name).outs
    kwargs = {k: convert(np.array(v)) if isinstance(v, np.ndarray) else v for k, v in baseline.items()}
    for arg, target in (out or {}).items():
        kwargs[arg] = target
        shape, dtype, inputs = outs[arg]
        for inp in inputs:
            if np.shape(baseline[inp]) == shape:
                kwargs[inp] = target
    return getattr(posenc, name)(**kwargs)


def out_templates(name: str) -> Dict[str, np.ndarray]:
    """A fresh array for each out= argument of posenc.<name>: the aliased input's values, or zeros."""
    baseline, templates = spec(name).baseline, {}
    for arg, (shape, dtype, inputs) in spec(name).outs.items():
        same = [inp for inp in inputs if np.shape(baseline[inp]) == shape]
        templates[arg] = np.array(baseline[same[0]], dtype) if same else np.zeros(shape, dtype)
    return templates


def as_numpy(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(as_numpy(r) for r in result)
    if have_peer(torch) and isinstance(result, torch.Tensor):
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


# --- PyTorch and JAX inputs ---------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("name", FUNCTIONS)
def test_torch_cpu_tensors_as_inputs(name, isa):
    assert_same(call(name, to_torch), call(name, np.array))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_unpickled_arrays_as_inputs(name, isa):
    """An unpickled array (what multiprocessing and dask.distributed workers receive) has its own
    dtype object, equal to but not the canonical one: the bindings compared dtypes by identity and
    refused such int64 positions."""
    assert_same(call(name, lambda a: pickle.loads(pickle.dumps(a))), call(name, np.array))


@requires_jax
@pytest.mark.parametrize("name", FUNCTIONS)
def test_jax_cpu_arrays_as_inputs(name, isa):
    assert_same(call(name, to_jax), call(name, np.array))


@requires_torch
@pytest.mark.parametrize("name", [n for n in FUNCTIONS if spec(n).outs])
def test_torch_out_is_written_in_place(name, isa):
    expected = call(name, np.array, out_templates(name))
    tensors = {arg: torch.from_numpy(a) for arg, a in out_templates(name).items()}
    pointers = {arg: t.data_ptr() for arg, t in tensors.items()}
    result = call(name, to_torch, tensors)
    results = result if isinstance(result, tuple) else (result,)
    for arg, t in tensors.items():
        assert any(r is t for r in results) and t.data_ptr() == pointers[arg], arg
    assert_same(result, expected)


@requires_torch
def test_inputs_are_viewed_not_copied():
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)[:, ::2]  # strided too
    view = _checks.as_array(t, "x")
    assert np.shares_memory(view, t.numpy()) and view.strides == t.numpy().strides
    if BFLOAT16 is not None:
        b = torch.zeros(3, 4, dtype=torch.bfloat16)
        bview = _checks.as_array(b, "x")
        assert bview.dtype == BFLOAT16 and bview.ctypes.data == b.data_ptr()
    if have_peer(jnp):
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


def to_torch_requiring_grad(a: np.ndarray) -> Any:
    """A tensor that requires grad where torch allows one (floating dtypes), else a plain tensor."""
    t = torch.from_numpy(np.array(a))
    return t.requires_grad_(True) if t.is_floating_point() else t


@requires_torch
@pytest.mark.parametrize("name", FUNCTIONS)
def test_torch_tensors_that_require_grad_are_read(name, isa):
    """Every read-only tensor argument (x, tables, slopes, positions, frequencies, scores...) may require
    grad: read through a detached view, the result as from plain arrays."""
    assert_same(call(name, to_torch_requiring_grad), call(name, np.array))


@requires_torch
def test_tensors_that_require_grad_are_viewed_not_copied():
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6).requires_grad_(True)[:, ::2]  # strided, not a leaf
    view = _checks.as_array(t, "x")
    assert view.ctypes.data == t.data_ptr() and view.strides == t.detach().numpy().strides
    p = torch.nn.Parameter(torch.zeros(3, 4))
    assert _checks.as_array(p, "table").ctypes.data == p.data_ptr()
    if BFLOAT16 is not None:
        b = torch.zeros(3, 4, dtype=torch.bfloat16, requires_grad=True)
        bview = _checks.as_array(b, "x")
        assert bview.dtype == BFLOAT16 and bview.ctypes.data == b.data_ptr()


@requires_torch
@pytest.mark.parametrize("name", [n for n in FUNCTIONS if any(o[1].kind == "f" for o in spec(n).outs.values())])
def test_torch_out_that_requires_grad_is_refused_untouched(name, isa):
    """An out= tensor that requires grad (a floating one: torch has no others) is a ValueError naming it
    (in place would bypass autograd); nothing is written, not even into the other outs."""
    for arg in (a for a, o in spec(name).outs.items() if o[1].kind == "f"):
        templates = out_templates(name)
        tensors = {a: torch.from_numpy(t.copy()) for a, t in templates.items()}
        tensors[arg].requires_grad_(True)
        with pytest.raises(ValueError, match=arg):
            call(name, to_torch, tensors)
        for a, t in tensors.items():
            np.testing.assert_array_equal(t.detach().numpy(), templates[a])


@requires_torch
def test_classes_read_tensors_that_require_grad(isa):
    q = torch.randn(2, 5, 4, 16, requires_grad=True)
    k = torch.randn(2, 5, 1, 16, requires_grad=True)
    rope = posenc.RotaryEmbedding(16)
    assert_same(rope(q, k, positions=torch.arange(5.0, requires_grad=True)),
                rope(q.detach().numpy(), k.detach().numpy(), positions=np.arange(5.0)))
    with pytest.raises(ValueError, match="out_q"):
        rope(q, k, out_q=q)
    emb = posenc.LearnedPositionalEmbedding(8, 16, seed=0)
    x = torch.randn(1, 5, 16, requires_grad=True)
    assert_same(emb.add(x), emb.add(x.detach().numpy()))


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

def test_one_version_everywhere():
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?\w+)?", posenc.__version__)
    assert importlib.metadata.version("posenc") == posenc.__version__
    if _backend.native is not None:
        assert _backend.native.__version__ == posenc.__version__


def test_package_ships_types():
    here = Path(posenc.__file__).parent
    assert (here / "py.typed").exists() and (here / "_native.pyi").exists()
