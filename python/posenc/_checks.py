"""Argument checks shared by every public function and both backends.

Each check names the argument and what was expected, and raises the NumPy
exception types: ``TypeError`` for a wrong kind (a float where an integer is
needed, an integer array where floats are), ``ValueError`` for a wrong value
or shape. Nothing here writes to user memory, so a failed check leaves every
``out`` untouched.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

# float32, float64, float16: NumPy's own.
_NUMPY_FLOATS: Tuple[np.dtype, ...] = tuple(np.dtype(t) for t in (np.float32, np.float64, np.float16))
_bfloat16: List[Optional[np.dtype]] = []  # [ml_dtypes' bfloat16, or None without ml_dtypes] once looked up


def bfloat16_dtype() -> Optional[np.dtype]:
    """ml_dtypes' bfloat16 (None when ml_dtypes is absent), imported on first use.

    Not at ``import posenc``: with NumPy 2.4, importing ml_dtypes 0.7 took
    1.2 s here (0.12 s for 0.6), eight times posenc's own import, paid by every
    program that never touches bfloat16.
    """
    if not _bfloat16:
        try:
            import ml_dtypes

            bf16 = np.dtype(ml_dtypes.bfloat16)
            _NATIVE_FLOAT_DTYPES.add(bf16)
            _bfloat16.append(bf16)
        except ImportError:
            _bfloat16.append(None)
    result: Optional[np.dtype] = _bfloat16[0]
    return result


def __getattr__(name: str) -> Any:
    # BFLOAT16, looked up on first use (bfloat16_dtype).
    if name == "BFLOAT16":
        return bfloat16_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_bfloat16(dtype: Any) -> bool:
    """Whether ``dtype`` is ml_dtypes' bfloat16 (False when ml_dtypes is absent).

    An array or dtype of bfloat16 can only exist once ml_dtypes is imported,
    so a dtype of another name never imports it. Never compare a dtype with
    ``None``: NumPy reads ``None`` as float64, so ``np.dtype("float64") ==
    None`` is True.
    """
    dt = np.dtype(dtype)
    if dt.name != "bfloat16" or dt.itemsize != 2:
        return False
    bf16 = bfloat16_dtype()
    return bf16 is not None and dt == bf16


def is_float_dtype(dtype: np.dtype) -> bool:
    """Whether posenc computes in ``dtype`` (either byte order)."""
    dt = dtype.newbyteorder("=")
    return dt in _NUMPY_FLOATS or is_bfloat16(dt)


def _supported_floats() -> str:
    """The float dtypes posenc computes in, for messages (imports ml_dtypes: only on a refusal)."""
    names = [str(d) for d in _NUMPY_FLOATS] + (["bfloat16"] if bfloat16_dtype() is not None else [])
    return ", ".join(names)


# Native-order dtypes of the fast path (float_array); ml_dtypes' bfloat16 joins once looked up.
_NATIVE_FLOAT_DTYPES = set(_NUMPY_FLOATS)  # dtypes compare (and hash) with their byte order
_MAX_BYTES = np.iinfo(np.intp).max


def integer(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None) -> int:
    """``operator.index(value)``: ints and integer scalars, never floats or bools."""
    if type(value) is int:  # the common case first (bool is a subclass, not this type)
        result = value
    elif isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got a bool")
    else:
        try:
            result = operator.index(value)
        except TypeError:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if minimum is not None and result < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {result}")
    if maximum is not None and result > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {result}")
    return result


# Integer positions are exact in float64 up to 2**53; beyond it consecutive
# positions collapse onto one value and the angles p·ω mean nothing.
MAX_EXACT_POSITION = 2**53


def offset(value: Any, count: int, name: str = "offset") -> int:
    """A first position: an integer such that ``value + k`` for k < count stays exact in float64."""
    if type(value) is int:  # the common case without a call
        if value == 0:  # the default: nothing to check
            return 0
        result = value
    else:
        result = integer(value, name)
    if abs(result) > MAX_EXACT_POSITION or abs(result + max(count - 1, 0)) > MAX_EXACT_POSITION:
        raise ValueError(f"{name} must keep positions within +-2**53 (exact in float64), got {result} "
                         f"for {count} positions")
    return result


def real(value: Any, name: str, *, positive: bool = False) -> float:
    """A finite real number (bools refused)."""
    if type(value) is float:  # the common case first
        result = value
    elif isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    else:
        try:
            result = float(value)
        except OverflowError:  # an int beyond float64's range (10**400)
            raise ValueError(f"{name} must be finite in float64, got an integer of {len(str(abs(int(value))))} "
                             "digits") from None
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {result}")
    if positive and result <= 0:
        raise ValueError(f"{name} must be > 0, got {result}")
    return result


def base(value: Any, name: str = "base") -> float:
    """A frequency base: finite, > 0 and not 1 (base 1 gives every pair the same angle)."""
    result = real(value, name, positive=True)
    if result == 1.0:
        raise ValueError(f"{name} must not be 1 (every frequency would be equal)")
    return result


def even_dim(value: Any, name: str = "dim") -> int:
    result = integer(value, name, minimum=1)
    if result % 2:
        raise ValueError(f"{name} must be even, got {result}")
    return result


def choice(value: Any, name: str, options: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return value


def boolean(value: Any, name: str) -> bool:
    """A bool or NumPy bool (a truthy string or 1 is not True)."""
    if value is True or value is False:
        return value
    if not isinstance(value, np.bool_):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def length(value: Any, name: str) -> int:
    """A count of positions (a sequence length): 0 <= n <= 2**53, so every position is exact in float64."""
    if type(value) is int and 0 <= value <= MAX_EXACT_POSITION:  # the common case without a call
        return value
    n = integer(value, name, minimum=0)
    if n > MAX_EXACT_POSITION:
        raise ValueError(f"{name} must be <= 2**53, got {n}")
    return n


def int_dtype(value: Any, name: str = "dtype") -> np.dtype:
    """A signed integer result dtype in native byte order."""
    dt = _dtype(value, name)
    if dt.kind != "i" or not dt.isnative:
        raise TypeError(f"{name} must be a signed integer dtype in native byte order, got {dt}")
    return dt


def _dtype(value: Any, name: str) -> np.dtype:
    try:
        dt: np.dtype = np.dtype(value)
        return dt
    except (TypeError, ValueError, SyntaxError):  # np.dtype(",") raises SyntaxError (found by the fuzzer)
        # NumPy knows the name "bfloat16" only once ml_dtypes is imported (bfloat16_dtype).
        bf16 = bfloat16_dtype() if isinstance(value, str) and value == "bfloat16" else None
        if bf16 is not None:
            return bf16
        raise TypeError(f"{name} must be a NumPy dtype, got {value!r}") from None


def float_dtype(value: Any, name: str = "dtype") -> np.dtype:
    """A floating result dtype posenc computes in."""
    dt = _dtype(value, name)
    if not is_float_dtype(dt) or dt.byteorder not in "=|" + _native_order():
        raise TypeError(f"{name} must be one of {_supported_floats()}, got {dt}")
    result: np.dtype = dt.newbyteorder("=")
    return result


def _native_order() -> str:
    return "<" if np.little_endian else ">"


def as_array(value: Any, name: str) -> np.ndarray:
    """A view of ``value`` as an ndarray: no copy for arrays, buffers and DLPack tensors.

    A torch tensor that requires grad is read through ``detach()``, a view of
    the same memory outside autograd (posenc's results carry no gradient);
    :func:`output` refuses one as an ``out``.
    """
    if isinstance(value, np.ndarray):
        return value
    if _requires_grad(value):
        value = value.detach()
    if hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, BufferError, RuntimeError):
            pass
    try:
        return np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - re-raised with the argument's name
        view = _torch_bfloat16(value, name)
        if view is not None:
            return view
        raise TypeError(f"{name} must be array-like, got {type(value).__name__}: {exc}") from None


def _requires_grad(value: Any) -> bool:
    """Whether ``value`` is a torch tensor that requires grad (NumPy and DLPack refuse to export those)."""
    return type(value).__module__.split(".")[0] == "torch" and getattr(value, "requires_grad", False) is True


def _torch_bfloat16(value: Any, name: str) -> Optional[np.ndarray]:
    """A CPU ``torch.bfloat16`` tensor as an ml_dtypes bfloat16 view of its memory (no copy).

    Neither NumPy's ``__array__`` path nor its DLPack import knows bfloat16;
    the tensor's bits are read as int16 and reinterpreted.
    """
    if type(value).__module__.split(".")[0] != "torch":
        return None
    import torch

    if not isinstance(value, torch.Tensor) or value.dtype != torch.bfloat16 or value.device.type != "cpu":
        return None
    bf16 = bfloat16_dtype()
    if bf16 is None:  # the feature needs ml_dtypes: say so rather than fail on NumPy's message
        raise TypeError(f"{name} is a torch.bfloat16 tensor, which needs ml_dtypes: pip install 'posenc[bfloat16]'")
    return np.asarray(value.detach().view(torch.int16).numpy()).view(bf16)


def float_array(value: Any, name: str) -> np.ndarray:
    """A floating array, in native byte order (byte-swapped input is converted)."""
    if type(value) is np.ndarray and value.dtype in _NATIVE_FLOAT_DTYPES:  # the common case first
        return value
    arr = as_array(value, name)
    if not is_float_dtype(arr.dtype):
        raise TypeError(f"{name} must have a floating dtype ({_supported_floats()}), got {arr.dtype}")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def integer_array(value: Any, name: str) -> np.ndarray:
    """An array of integers of any shape and integer dtype; floats and bools are a TypeError.

    An empty sequence (``[]``, which NumPy reads as float64) is an empty int64 array.
    """
    arr = as_array(value, name)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and not isinstance(value, np.ndarray) and arr.dtype.kind == "f":
            return arr.astype(np.int64)
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr


def positions(value: Any, name: str = "positions") -> Tuple[Optional[np.ndarray], int]:
    """Positions as (float64 vector or None, count). An int n means arange(n)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return None, integer(value, name, minimum=0)
    arr = as_array(value, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be an int or a 1-D array, got an array of shape {arr.shape}")
    return position_values(arr, name), arr.shape[0]


def position_values(arr: np.ndarray, name: str = "positions") -> np.ndarray:
    """Finite integer or float positions of any shape, as float64."""
    is_float = is_float_dtype(arr.dtype)
    if arr.dtype.kind not in "iu" and not is_float:
        raise TypeError(f"{name} must hold integers or floats, got dtype {arr.dtype}")
    values = np.require(arr, np.float64, ["C", "A"])  # aligned: the kernels load doubles from it
    if values.size and not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite (found NaN or infinity)")
    if is_float and values.size:
        zeros = values == 0
        if zeros.any() and np.signbit(values[zeros]).any():
            # −0 is position 0: NumPy's sin(−0·ω) is −0 where the kernels' is +0, so both executors get +0.
            values = values + 0.0
    return values


def result_size(shape: Sequence[int], dtype: np.dtype, name: str) -> None:
    """Refuse shapes whose byte size overflows the address space (before allocating)."""
    total = dtype.itemsize
    for extent in shape:
        total *= extent
    if total > _MAX_BYTES:
        raise ValueError(f"{name} of shape {tuple(shape)} and dtype {dtype} would need {total} bytes")


class Out(NamedTuple):
    """A caller's ``out``: the ndarray view executors write, and the object to return as passed."""

    array: np.ndarray
    given: Any


# Out's constructor without NamedTuple's keyword handling (a tiny call builds one on every in-place call).
_new_out = functools.partial(tuple.__new__, Out)


def out_target(
    out: Any,
    shape: Sequence[int],
    dtype: np.dtype,
    inputs: Sequence[Tuple[np.ndarray, str]] = (),
    name: str = "out",
    reads: Sequence[Tuple[Any, str]] = (),
) -> Optional[Out]:
    """:func:`output` as an :class:`Out` record (None if ``out`` is None). ``reads``: the caller's other
    arguments the kernel reads (positions, coords, slopes...), as given: ``out`` must not overlap them."""
    if out is None:
        return None
    if inputs and out is inputs[0][0] and _whole(out) and out.shape == tuple(shape) and out.dtype == dtype:
        _apart(out, [*inputs[1:], *reads], name)  # in place on the (contiguous) input itself
        return _new_out((out, out))
    return _new_out((output(out, shape, dtype, [*inputs, *reads], name), out))


def out_like(out: Any, x: np.ndarray, x_name: str = "x", name: str = "out",
             others: Sequence[Tuple[Any, str]] = ()) -> Optional[Out]:
    """``out_target(out, x.shape, x.dtype, [(x, x_name), *others], name)``, its arguments built only when
    needed (not for None or ``x`` itself: a decode step's in-place call)."""
    if out is None:
        return None
    if out is x and _whole(x):
        _apart(x, others, name)
        return _new_out((x, x))
    return _new_out((output(out, x.shape, x.dtype, [(x, x_name), *others], name), out))


def _whole(a: np.ndarray) -> bool:
    """Whether ``a`` is a writeable, contiguous ndarray: as an ``out`` that is its own input, nothing can go wrong."""
    flags = a.flags
    return bool(flags.writeable and (flags.c_contiguous or flags.f_contiguous))


def output(
    out: Any,
    shape: Sequence[int],
    dtype: np.dtype,
    inputs: Sequence[Tuple[Any, str]] = (),
    name: str = "out",
) -> Optional[np.ndarray]:
    """Check a caller's ``out``: exact shape and dtype, writeable, no partial overlap.

    Returns the ndarray view to write (``None`` if ``out`` is None). ``out``
    may be exactly one of the inputs (same memory, shape and strides).
    """
    if out is None:
        return None
    if not isinstance(out, np.ndarray) and not _exposes_memory(out):
        # np.asarray(list) is a new array: the results would go there and the caller's
        # list would stay as it was.
        raise TypeError(f"{name} must be an array that exposes its memory (a NumPy array, a CPU tensor), "
                        f"got {type(out).__name__}")
    if _requires_grad(out):
        raise ValueError(f"{name} is a torch tensor that requires grad: writing it in place would bypass autograd "
                         f"(pass a tensor that does not require grad; {name}.detach() shares its memory)")
    arr = as_array(out, name)
    if arr.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype}, got {arr.dtype}")
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(arr.shape)}")
    if not arr.flags.writeable:
        raise ValueError(f"{name} is read-only")
    if _self_overlapping(arr):
        raise ValueError(f"{name} overlaps itself: elements share memory (a zero or too small stride, strides {arr.strides})")
    _apart(arr, inputs, name)
    return arr


def _apart(arr: np.ndarray, inputs: Sequence[Tuple[Any, str]], name: str) -> None:
    """Refuse an input that overlaps ``arr``, the array written, without being exactly it (the same
    memory, strides, shape and dtype): the kernel would read values it has already written. An input is
    an array or any argument as the caller gave it; one that exposes no memory (None, a number, a list)
    cannot overlap."""
    for given, inp_name in inputs:
        inp = given if isinstance(given, np.ndarray) else (
            as_array(given, inp_name) if given is not None and _exposes_memory(given) else None)
        if inp is None or arr is inp or not np.may_share_memory(arr, inp):
            continue
        identical = (
            arr.__array_interface__["data"][0] == inp.__array_interface__["data"][0]
            and arr.strides == inp.strides
            and arr.shape == inp.shape
            and arr.dtype == inp.dtype
        )
        if not identical and _overlap(arr, inp):
            raise ValueError(f"{name} overlaps {inp_name} without being the same array")


def _exposes_memory(value: Any) -> bool:
    """Whether np.asarray(value) can be a view of value's memory (not a fresh copy of a sequence)."""
    if isinstance(value, (list, tuple, str, bytes, int, float, complex, bool, np.generic)):
        return False
    if hasattr(value, "__array_interface__") or hasattr(value, "__dlpack__") or hasattr(value, "__array__"):
        return True
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


def _self_overlapping(arr: np.ndarray) -> bool:
    """Whether two elements of ``arr`` may share memory (an as_strided view with a zero stride).

    Writing such an ``out`` would race between threads and leave whichever
    value came last. The test is exact for every view NumPy's slicing,
    transposing and reshaping can make: sorted by stride, each axis must
    step past everything the smaller axes span.
    """
    span = arr.itemsize
    for n, stride in sorted(((n, abs(s)) for n, s in zip(arr.shape, arr.strides) if n > 1), key=lambda t: t[1]):
        if stride < span:
            return arr.size > 0
        span = stride * (n - 1) + span
    return False


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    if not np.may_share_memory(a, b):  # disjoint address ranges (the usual case), proved at a fraction of the cost
        return False
    try:
        # NumPy documents any positive max_work; its stubs list only -1 and 0.
        return bool(np.shares_memory(a, b, max_work=10**6))  # type: ignore[arg-type]
    except Exception:  # TooHardError: too costly to prove disjoint, so refuse
        return True


def disjoint(a: np.ndarray, a_name: str, b: np.ndarray, b_name: str) -> None:
    """Refuse two operands that may share memory (an ``out`` and another call's operand, or two outs)."""
    if _overlap(a, b):
        raise ValueError(f"{a_name} overlaps {b_name}")


# --- added by rope (issue 13): one first position per batch row

def offsets(value: Any, count: int, name: str = "offset") -> np.ndarray:
    """A 1-D integer array of first positions (one per batch row), each such that ``value[b] + k`` for
    k < count stays exact in float64, as int64."""
    arr = integer_array(value, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be an integer or a 1-D array of one integer per batch row, got shape {arr.shape}")
    last = max(count - 1, 0)
    if arr.size and (arr.max() > MAX_EXACT_POSITION - last or (arr.dtype.kind == "i" and arr.min() < -MAX_EXACT_POSITION)):
        raise ValueError(f"{name} must keep positions within +-2**53 (exact in float64), got values in "
                         f"[{arr.min()}, {arr.max()}] for {count} positions")
    return arr.astype(np.int64)


# --- added by rope_nd (moved from _vision: sinusoidal_nd and rope_axial_freqs take the same argument)

def axes_dims(value: Any, name: str = "axes_dims") -> Tuple[int, ...]:
    """A non-empty sequence of even feature counts, one per axis."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be a sequence of even integers, got {type(value).__name__}")
    dims = tuple(even_dim(d, f"{name}[{a}]") for a, d in enumerate(value))
    if not dims:
        raise ValueError(f"{name} must name at least one axis")
    return dims
