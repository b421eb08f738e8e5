"""posenc on Dask arrays: out of core and across machines (optional extra ``dask``).

Each function here has the signature of the in-memory function of the same
name and returns a lazy ``dask.array.Array``. It is a thin layer over the
public in-memory functions, not an executor of its own:

- at call time it checks every argument (the global shapes with posenc's own
  ``_checks``, the rest by running the in-memory function once on a tiny
  representative block of zeros with the real arguments), so a bad argument
  raises while the graph is built, not on a worker an hour later;
- then ``map_blocks`` runs the in-memory function (the native kernels) on each
  block with the block's **global** offsets from ``block_info``: its first
  row (sequence position), its first query and key (relative biases), its
  first head (ALiBi slopes, T5 table columns), its batch rows (per-sequence
  positions).

Results are identical, bit for bit, to the in-memory call on the whole array,
for any chunking. Two details make that true:

- The sinusoidal and rotary kernels evaluate sin/cos exactly at every row
  index that is a multiple of ``ANCHOR_ROWS`` (32) and advance the rows in
  between by the angle-addition identity (``cpp/include/posenc/angles.hpp``).
  A block whose first row is not such a multiple therefore computes its
  first rows (up to the next multiple) from the previous multiple, through a
  small scratch array of at most 31 rows; the rest of the block goes through
  the kernel directly. The test module checks this against the in-memory call
  for random chunkings, so a change of the kernels' anchor spacing fails it.
- The last (feature) axis of ``x`` must be whole in each block (sinusoidal
  and rotary pairs, learned rows span it): a chunked feature axis is
  **rechunked** to one chunk (``x.rechunk({-1: -1})``). The relative biases
  chunk their last (key) axis freely.

Each block is read once and written once into a new block: input blocks are
never modified (Dask may share them: ``from_array`` views of your array,
read-only memory maps), so there is no ``out=``; write results with
``dask.array.store``, ``to_zarr`` or ``to_npy_stack``.

Threads: inside a Dask task posenc's kernels run on the task's own thread
(OpenMP limited to one thread *for that thread only*, through threadpoolctl),
so a worker with ``threads_per_worker=T`` runs at most ``T`` posenc threads and
the threaded scheduler at most its pool size: Dask's parallelism is the
parallelism, never multiplied by posenc's. (``dask.distributed`` worker
processes also start with ``OMP_NUM_THREADS=1``.) An explicit
:func:`posenc.set_num_threads` wins over this.

Not here yet: ``apply_rope_nd`` (no in-memory function yet).
"""

from __future__ import annotations

import __future__  # the compiler flag of ``from __future__ import annotations``, for the written def

import ast
import importlib
import inspect
import linecache
import re
import textwrap
import threading
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, cast

import numpy as np

try:  # Dask has no type annotations: its module is Any here (mypy --strict, with or without Dask)
    da: Any = importlib.import_module("dask.array")
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("posenc.dask needs Dask: pip install 'posenc[dask]' (or 'dask[array]')") from error

import posenc as _posenc

from . import _checks

__all__ = ["add_alibi", "add_sinusoidal", "add_t5_bias", "apply_rope", "embedding_add", "sinusoidal"]

#: Rows between exact sin/cos evaluations in the sinusoidal and rotary kernels
#: (``kAnchorRows`` in cpp/include/posenc/angles.hpp): a block must start its
#: recurrence where the whole-array call does.
ANCHOR_ROWS = 32


# ---------------------------------------------------------------- shared machinery

_limits = threading.local()
_controller: List[Any] = []



F = TypeVar("F", bound=Callable[..., Any])

_LAZY_RESULT = """    out : None
        Not supported (a lazy result): store it with ``dask.array.store``.

    Returns
    -------
    dask.array.Array of """


def _lazy(memory: F, *, without: Tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], F]:
    """The lazy twin of the in-memory function ``memory``: its parameters (less ``without``, not supported lazily).

    The decorated ``run(a, *, own...)`` is the body: ``a`` holds every
    argument by name, defaults applied (``a.x``, ``a.offset``); the
    keyword-only parameters after ``a`` are the lazy function's own
    (``chunks``), placed before ``out``. ``out`` must be None (checked here).
    A block's function must not close over ``a``: it holds the whole input,
    which every task would then carry (dask.distributed sends each task on
    its own); it closes over locals such as ``_passed_on(a, ...)``.

    The public function is a plain ``def`` written from that parameter list,
    each default as its source spells it (``np.float32``), so ``help``,
    ``inspect.signature``, Sphinx and Python's own ``TypeError`` for a call
    that does not fit all see the real parameters (a ``__signature__`` would
    satisfy the first two only). Its docstring is run's,
    with two lines filled in: ``__LAZY_RESULT__ <what>`` (the ``out`` and
    ``Returns`` sections) and ``__AS_IN_MEMORY__ <remark>``, the parameters
    the docstring does not describe itself followed by "As in
    :func:`posenc.<name>`" and the remark (a full stop without one).

    Typed for mypy as ``memory`` (a lazy function that adds parameters passes
    ``memory`` as ``Callable[..., Any]``).
    """

    def make(run: Callable[..., Any]) -> F:
        inner = inspect.unwrap(memory)  # the plan builder: the def that declares the public parameters
        declared = inspect.signature(inner).parameters
        assert set(without) <= set(declared) and list(declared)[-1] == "out"
        params = [p for p in declared.values() if p.name not in without]
        own = [p for p in inspect.signature(run).parameters.values() if p.kind is p.KEYWORD_ONLY]
        params = params[:-1] + own + params[-1:]
        spelled = {**_spelled_defaults(inner), **_spelled_defaults(run)}
        listed, star = [], False
        for p in params:
            if p.kind is p.KEYWORD_ONLY and not star:
                listed.append("*")
                star = True
            annotation = "" if p.annotation is p.empty else f": {p.annotation}"
            default = "" if p.default is p.empty else f" = {spelled[p.name]}"
            listed.append(p.name + annotation + default)
        arguments = ", ".join(f"{p.name}={p.name}" for p in params)
        source = (f"def {run.__name__}({', '.join(listed)}) -> Any:\n"
                  f"    return _run(SimpleNamespace({arguments}))\n")
        filename = f"<posenc.dask.{run.__name__}: the parameters of {memory.__module__}.{memory.__name__}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for inspect.getsource

        def call(a: Any) -> Any:
            _no_out(a.out)
            return run(a, **{p.name: getattr(a, p.name) for p in own})

        # The defaults are evaluated where they were written (``np.float32``: in the builder's module).
        namespace = {**inner.__globals__, "_run": call, "SimpleNamespace": SimpleNamespace}
        code = compile(source, filename, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
        exec(code, namespace)
        lazy: Any = namespace[run.__name__]
        lazy.__module__, lazy.__qualname__ = run.__module__, run.__qualname__
        doc = (run.__doc__ or "").replace("__LAZY_RESULT__ ", _LAZY_RESULT)
        described = set(re.findall(r"^    (\w+) : ", doc, re.M))
        same = f"    {', '.join(p.name for p in params if p.name not in described)}\n" \
               f"        As in :func:`posenc.{memory.__name__}`"
        lazy.__doc__ = re.sub(r"^__AS_IN_MEMORY__(.*)$", lambda m: same + (m.group(1) or "."), doc, flags=re.M)
        return cast(F, lazy)

    return make


def _passed_on(a: Any, *handled: str) -> Dict[str, Any]:
    """The arguments in ``a`` but ``handled`` and ``out``: passed on unchanged to each block's in-memory call."""
    return {name: value for name, value in vars(a).items() if name not in handled and name != "out"}


def _spelled_defaults(func: Callable[..., Any]) -> Dict[str, str]:
    """Each parameter default of ``func`` as its source spells it (``np.float32``), or by its value where the
    source names a constant of its own module (``DEFAULT_BASE``: a name that means nothing in posenc.dask)."""
    source = textwrap.dedent(inspect.getsource(func))
    tree = ast.parse(source).body[0]
    assert isinstance(tree, ast.FunctionDef)
    args = tree.args
    named = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
    named += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    values = inspect.signature(func).parameters
    return {a.arg: repr(values[a.arg].default) if isinstance(d, ast.Name) else str(ast.get_source_segment(source, d))
            for a, d in named}


def _one_thread(run: Callable[[], Any]) -> Any:
    """``run()`` with OpenMP limited to one thread in the calling thread only (see the module docstring)."""
    if getattr(_limits, "active", False):
        return run()
    if not _controller:
        try:
            threadpoolctl: Any = importlib.import_module("threadpoolctl")  # untyped
        except ImportError:  # pragma: no cover - threadpoolctl comes with the extra
            _controller.append(None)
        else:
            _controller.append(threadpoolctl.ThreadpoolController())
    controller = _controller[0]
    if controller is None:  # pragma: no cover
        return run()
    _limits.active = True
    try:
        # OpenMP's thread count is a per-thread setting (nthreads-var), so this
        # limit does not touch the tasks running beside this one.
        with controller.limit(limits=1, user_api="openmp"):
            return run()
    finally:
        _limits.active = False


def _dask_array(value: Any, name: str) -> Any:
    """``value`` as a dask array (NumPy arrays and array_likes are wrapped, one chunk per ``auto`` rule)."""
    if isinstance(value, da.Array):
        return value
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return da.asarray(value)
    return da.asarray(_checks.as_array(value, name))


def _no_out(out: Any) -> None:
    if out is not None:
        raise TypeError("out: posenc.dask functions return a lazy dask array and take no out=; write the result "
                        "with dask.array.store(result, target), result.to_zarr(...) or da.to_npy_stack(...)")


def _whole_last_axis(x: Any) -> Any:
    """x with its last axis in one chunk (rechunked when it was split)."""
    return x if len(x.chunks[-1]) <= 1 else x.rechunk({x.ndim - 1: -1})


def _zeros(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    return np.zeros(tuple(shape), dtype)


def _take(a: np.ndarray, axis: int, start: int, stop: int) -> np.ndarray:
    index: List[Any] = [slice(None)] * a.ndim
    index[axis] = slice(start, stop)
    view: np.ndarray = a[tuple(index)]
    return view


def _anchored(xb: np.ndarray, axis: int, first: int, call: Callable[[np.ndarray, Any, int, int], Any]) -> np.ndarray:
    """A row-anchored kernel over block ``xb`` whose row 0 is global row ``first``.

    ``call(x, out, row, stop)`` runs the in-memory function on ``x`` (rows
    ``row .. stop`` of the whole array along ``axis``) into ``out`` (None: a
    new array, returned). Rows before the first multiple of ANCHOR_ROWS go
    through a scratch array that starts at the previous multiple (its leading
    rows are zeros whose results are dropped), so every row follows the same
    recurrence as in the whole-array call; the rest is computed straight from
    the block into the result.
    """
    rows = xb.shape[axis]
    head = -first % ANCHOR_ROWS
    if head == 0 or rows == 0:
        return np.asarray(call(xb, None, first, first + rows))
    head = min(head, rows)
    pad = first % ANCHOR_ROWS
    shape = list(xb.shape)
    shape[axis] = pad + head
    scratch = _zeros(shape, xb.dtype)
    _take(scratch, axis, pad, pad + head)[...] = _take(xb, axis, 0, head)
    call(scratch, scratch, first - pad, first + head)
    if head == rows:
        return _take(scratch, axis, pad, pad + head)
    result = np.empty(xb.shape, xb.dtype)
    _take(result, axis, 0, head)[...] = _take(scratch, axis, pad, pad + head)
    call(_take(xb, axis, head, rows), _take(result, axis, head, rows), first + head, first + rows)
    return result


def _location(block_info: Optional[Dict[Any, Any]], index: Optional[int] = 0) -> List[Tuple[int, int]]:
    assert block_info is not None
    return list(block_info[index]["array-location"])


# ---------------------------------------------------------------- sinusoidal

def _row_chunks(chunks: Any, n: int, dim: int, dtype: np.dtype) -> Tuple[int, ...]:
    """The row chunks of an [n, dim] table: "auto", rows per block (>= 1), or block sizes summing to n."""
    if isinstance(chunks, str):
        if chunks != "auto":
            raise ValueError(f"chunks must be 'auto', an int >= 1 or a tuple of block sizes, got {chunks!r}")
        return tuple(da.core.normalize_chunks(("auto", dim), (n, dim), dtype=dtype)[0]) if n else (0,)
    if isinstance(chunks, (tuple, list)):
        sizes = tuple(_checks.integer(c, "chunks", minimum=0) for c in chunks)
        if sum(sizes) != n:
            raise ValueError(f"chunks must sum to the {n} rows of the table, got {sizes}")
        return sizes
    step = _checks.integer(chunks, "chunks", minimum=1)
    return tuple(min(step, n - r) for r in range(0, n, step)) or (0,)


# Typed loosely (mypy would refuse ``chunks``): the lazy table adds it to the in-memory parameters.
_TABLE: Callable[..., Any] = _posenc.sinusoidal


@_lazy(_TABLE)
def sinusoidal(a: Any, *, chunks: Any = "auto") -> Any:
    """A lazy sinusoidal table ``[n, dim]``, identical to :func:`posenc.sinusoidal`, chunked along rows.

    Parameters
    ----------
__AS_IN_MEMORY__ (positions: an int ``n`` or a 1-D
        array_like; a dask array is computed first, it is small).
    chunks : int, tuple of int or "auto"
        Rows per block, or each block's rows (summing to ``n``), or "auto"
        (Dask's ``array.chunk-size``). The feature axis is always one chunk.
__LAZY_RESULT__ shape [n, dim] and dtype ``dtype``

    Examples
    --------
    >>> import numpy as np, posenc, posenc.dask
    >>> table = posenc.dask.sinusoidal(1000, 64, chunks=100)
    >>> table.chunks[0][:3], table.chunks[1]
    ((100, 100, 100), (64,))
    >>> bool(np.array_equal(table.compute(), posenc.sinusoidal(1000, 64)))
    True
    """
    positions = a.positions.compute() if isinstance(a.positions, da.Array) else a.positions
    pos, n = _checks.positions(positions)
    # The whole call's checks (dim, base, freq_rule, dtype, size) on an empty table.
    options = _passed_on(a, "positions", "dim", "dtype", "chunks")
    _posenc.sinusoidal(0, a.dim, dtype=a.dtype, **options)
    dt = _checks.float_dtype(a.dtype)
    dim = _checks.even_dim(a.dim)
    _checks.result_size((n, dim), dt, "the table")
    values = pos  # None: row r has position r (never materialised: n may exceed memory)
    rows = _row_chunks(chunks, n, dim, dt)

    def block(block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
        (start, stop), _ = _location(block_info, None)
        first = start - start % ANCHOR_ROWS
        # The table kernel anchors at local multiples of ANCHOR_ROWS: start
        # the block at the previous global multiple and drop the extra rows.
        rows = np.arange(first, stop, dtype=np.float64) if values is None else values[first:stop]
        table = _one_thread(lambda: _posenc.sinusoidal(rows, dim, dtype=dt, **options))
        return np.asarray(table[start - first:])

    return da.map_blocks(block, chunks=(rows, (dim,)), dtype=dt, meta=np.empty((0, 0), dt))


@_lazy(_posenc.add_sinusoidal)
def add_sinusoidal(a: Any) -> Any:
    """Lazy ``scale·x + PE`` for a dask array ``x`` ``[..., seq, dim]``: :func:`posenc.add_sinusoidal` per block.

    Every block gets the positions of its global rows; the result equals the
    in-memory call on the whole array bit for bit, for any chunking of the
    leading and sequence axes. A chunked feature (last) axis is rechunked to
    one chunk.

    Parameters
    ----------
    x : dask array (or array_like) of shape [..., seq, dim], floating
__AS_IN_MEMORY__ (``positions``: None, an int or a
        1-D array_like of ``seq`` entries; a dask array is computed first).
__LAZY_RESULT__ x's shape and dtype

    Examples
    --------
    >>> import dask.array as da, numpy as np, posenc, posenc.dask
    >>> x = np.random.default_rng(0).standard_normal((4, 100, 8)).astype(np.float32)
    >>> y = posenc.dask.add_sinusoidal(da.from_array(x, chunks=(2, 30, 8)), offset=5)
    >>> bool(np.array_equal(y.compute(), posenc.add_sinusoidal(x, offset=5)))
    True
    """
    xd = _whole_last_axis(_dask_array(a.x, "x"))
    if xd.ndim < 2:
        raise ValueError(f"x must have shape [..., seq, dim], got shape {xd.shape}")
    seq, dim = xd.shape[-2], xd.shape[-1]
    positions = a.positions.compute() if isinstance(a.positions, da.Array) else a.positions
    values = None
    if positions is not None:
        values, n = _checks.positions(positions)
        if n != seq:
            raise ValueError(f"positions has {n} entries but x has seq length {seq}")
        if values is None:
            values = np.arange(n, dtype=np.float64)
    start = _checks.offset(a.offset, seq)
    if values is not None and start != 0:
        raise ValueError("give either positions or offset, not both")
    # Everything else (dtype, dim, base, interleaved, scale, offset/positions
    # together): the in-memory call on one row of zeros.
    options = _passed_on(a, "x", "offset", "positions")
    _posenc.add_sinusoidal(_zeros((1, dim), xd.dtype), offset=0 if values is not None else start,
                           positions=None if values is None else values[:1], **options)
    axis = xd.ndim - 2

    def call(xa: np.ndarray, dest: Any, row: int, stop: int) -> Any:
        if values is None:
            return _posenc.add_sinusoidal(xa, offset=start + row, out=dest, **options)
        return _posenc.add_sinusoidal(xa, positions=values[row:stop], out=dest, **options)

    def block(xb: np.ndarray, block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
        first = _location(block_info)[axis][0]
        return _one_thread(lambda: _anchored(xb, axis, first, call))  # type: ignore[no-any-return]

    return da.map_blocks(block, xd, dtype=xd.dtype, meta=np.empty((0,) * xd.ndim, xd.dtype))


# ---------------------------------------------------------------- rotary

def _rope_positions(positions: Any, xd: Any, seq_ax: int, mrope: bool) -> Any:
    """positions as a dask array [group, ext, 1..., axes] laid out on x's axes (see apply_rope), or None.

    Axis 0 holds the batch (or 1 when shared), x's sequence axis holds, for
    each of x's sequence blocks, the positions of its rows preceded by those
    of the rows back to the previous multiple of ANCHOR_ROWS (what the
    block's first rows need to follow the whole call's recurrence), the last
    axis holds the M-RoPE axes (1 without M-RoPE). Other axes have size 1.
    """
    if positions is None:
        return None
    seq, axes = xd.shape[seq_ax], 3 if mrope else 1
    lead = (axes,) if mrope else ()
    expected = f"[{'axes, ' if mrope else ''}seq] or [{'axes, ' if mrope else ''}batch, seq]"
    if isinstance(positions, da.Array):
        pd = positions
        if pd.dtype.kind not in "iuf":
            raise TypeError(f"positions must be integers or floats, got dtype {pd.dtype}")
    else:
        arr = _checks.as_array(positions, "positions")
        _checks.position_values(arr, "positions")
        pd = da.from_array(arr, chunks=arr.shape or ())
    given = tuple(pd.shape)  # for the messages (positions may be a list)
    if pd.ndim == len(lead) + 1 and pd.shape[:len(lead)] == lead:
        pd = pd[(slice(None),) * len(lead) + (None,)]
    if pd.ndim != len(lead) + 2 or pd.shape[:len(lead)] != lead:
        raise ValueError(f"positions must have shape {expected}, got {given}")
    if pd.shape[-1] != seq:
        raise ValueError(f"positions has {pd.shape[-1]} entries per row but x has seq length {seq}")
    groups = pd.shape[-2]
    if groups != 1 and (seq_ax == 0 or groups != xd.shape[0]):
        raise ValueError(f"positions of shape {given} need x's axis 0 to be a batch of {groups}, "
                         f"x has shape {xd.shape} with the sequence on axis {seq_ax}")
    pd = pd.reshape((axes, groups, seq))
    # [axes, groups, seq] -> [groups, seq, axes], chunked as x's batch and sequence axes.
    pd = pd.transpose(1, 2, 0).rechunk((xd.chunks[0] if groups != 1 else (1,), xd.chunks[seq_ax], (axes,)))
    starts = np.cumsum((0,) + xd.chunks[seq_ax][:-1])
    pieces = [pd[:, int(r0 - r0 % ANCHOR_ROWS):int(r0 + n)] for r0, n in zip(starts, xd.chunks[seq_ax])]
    ext = da.concatenate(pieces, axis=1) if pieces else pd
    ext_chunks = tuple(int(r0 % ANCHOR_ROWS + n) for r0, n in zip(starts, xd.chunks[seq_ax]))
    ext = ext.rechunk((pd.chunks[0], ext_chunks, (axes,)))
    # Lay it on x's axes: groups on axis 0, ext on the sequence axis, axes last, size 1 elsewhere.
    index: List[Any] = [None] * xd.ndim
    index[0] = slice(None)
    index[seq_ax] = slice(None)
    index[-1] = slice(None)
    if seq_ax == 0:  # [seq, ..., dim]: no batch axis (groups == 1)
        ext = ext[0]
        index[0] = slice(None)
    return ext[tuple(index)]


@_lazy(_posenc.apply_rope, without=("cos", "sin"))
def apply_rope(a: Any) -> Any:
    """Lazy :func:`posenc.apply_rope` of a dask array ``x``, block by block with global positions.

    Identical, bit for bit, to the in-memory call on the whole array for any
    chunking of the batch, sequence and head axes. A chunked head_dim (last)
    axis is rechunked to one chunk.

    Parameters
    ----------
    x : dask array (or array_like), [..., seq, heads, head_dim] (seq_axis=-3) or [..., heads, seq, head_dim] (-2)
    positions : array_like or dask array, optional
        As in :func:`posenc.apply_rope`: None (``offset + arange(seq)``),
        ``[seq]``, ``[batch, seq]`` (x's axis 0 is the batch) or, with
        ``mrope_section``, ``[axes, seq]`` / ``[axes, batch, seq]``. A dask
        array is used lazily, chunk by chunk beside the data (rechunked to
        x's batch and sequence chunks if it is not aligned with them); its
        values are checked when its blocks are computed, its shape now.
__AS_IN_MEMORY__
__LAZY_RESULT__ x's shape and dtype

    Examples
    --------
    >>> import dask.array as da, numpy as np, posenc, posenc.dask
    >>> x = np.random.default_rng(0).standard_normal((2, 100, 4, 16)).astype(np.float32)
    >>> pos = np.arange(200).reshape(2, 100) * 3               # [batch, seq]
    >>> y = posenc.dask.apply_rope(da.from_array(x, chunks=(1, 30, 2, 16)), da.from_array(pos, chunks=(1, 30)))
    >>> bool(np.array_equal(y.compute(), posenc.apply_rope(x, pos)))
    True
    """
    xd = _whole_last_axis(_dask_array(a.x, "x"))
    seq_axis, positions, offset = a.seq_axis, a.positions, a.offset
    if isinstance(seq_axis, (bool, np.bool_)) or not isinstance(seq_axis, (int, np.integer)) or seq_axis not in (-3, -2):
        raise ValueError(f"seq_axis must be -3 ([..., seq, heads, dim]) or -2 ([..., heads, seq, dim]), got {seq_axis!r}")
    needed = 3 if seq_axis == -3 else 2
    if xd.ndim < needed:
        layout = "[..., seq, heads, head_dim]" if seq_axis == -3 else "[..., seq, head_dim]"
        raise ValueError(f"x must have shape {layout} (at least {needed} axes), got shape {xd.shape}")
    seq_ax = xd.ndim + int(seq_axis)
    seq = xd.shape[seq_ax]
    mrope = a.mrope_section is not None
    kwargs = _passed_on(a, "x", "positions", "offset")
    if positions is None:
        start = _checks.offset(offset, seq)
    else:
        start = 0
        if not (offset == 0 and type(offset) is int):
            _checks.integer(offset, "offset")
            if offset != 0:
                raise ValueError("give either positions or offset, not both")
    # Every other argument: the in-memory call on one position of zeros.
    rep = _zeros((1,) * (xd.ndim - 1) + (xd.shape[-1],), xd.dtype)
    rep_positions = None if positions is None else np.zeros((3, 1) if mrope else (1,))
    _posenc.apply_rope(rep, rep_positions, offset=start, **kwargs)
    ext = _rope_positions(positions, xd, seq_ax, mrope)

    def call_offset(xa: np.ndarray, dest: Any, row: int, stop: int) -> Any:
        return _posenc.apply_rope(xa, None, offset=start + row, out=dest, **kwargs)

    if ext is None:
        def block(xb: np.ndarray, block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
            first = _location(block_info)[seq_ax][0]
            return _one_thread(lambda: _anchored(xb, seq_ax, first, call_offset))  # type: ignore[no-any-return]

        return da.map_blocks(block, xd, dtype=xd.dtype, meta=np.empty((0,) * xd.ndim, xd.dtype))

    def block_positions(xb: np.ndarray, pb: np.ndarray, block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
        first = _location(block_info)[seq_ax][0]
        # pb: [groups, ext, 1..., axes] -> [axes, groups, ext], ext = rows back to the previous anchor.
        squeeze = tuple(a for a in range(1, pb.ndim - 1) if a != seq_ax)
        values = np.moveaxis(pb.squeeze(axis=squeeze) if squeeze else pb, -1, 0)
        if seq_ax == 0:
            values = values[:, None, :]
        pad = values.shape[-1] - xb.shape[seq_ax]
        values = values if mrope else values[0]

        def call(xa: np.ndarray, dest: Any, row: int, stop: int) -> Any:
            return _posenc.apply_rope(xa, values[..., row - first + pad:stop - first + pad], out=dest, **kwargs)

        return _one_thread(lambda: _anchored(xb, seq_ax, first, call))  # type: ignore[no-any-return]

    return da.map_blocks(block_positions, xd, ext, dtype=xd.dtype,
                         meta=np.empty((0,) * xd.ndim, xd.dtype))


# ---------------------------------------------------------------- learned

@_lazy(_posenc.embedding_add)
def embedding_add(a: Any) -> Any:
    """Lazy :func:`posenc.embedding_add` (``x + table[positions]``) of a dask array ``x``, block by block.

    Parameters
    ----------
    x : dask array (or array_like) of shape [..., dim], floating
        A chunked feature (last) axis is rechunked to one chunk.
    table : array_like of shape [num_positions, dim], x's dtype
        A NumPy table (it goes into the graph once, beside every task).
    positions : array_like or dask array of integers
        Shape ``x.shape[:-1]`` or a trailing part of it, as in
        :func:`posenc.embedding_add`. A NumPy array is checked whole now (range
        too); a dask array is used lazily, aligned with (rechunked to) x's
        chunks on those axes: its shape is checked now, its values when its
        blocks are computed (the same ``IndexError``, naming the entry within
        the block).
__LAZY_RESULT__ x's shape and dtype

    Examples
    --------
    >>> import dask.array as da, numpy as np, posenc, posenc.dask
    >>> table = np.arange(20, dtype=np.float32).reshape(10, 2)
    >>> x = da.ones((4, 6, 2), dtype=np.float32, chunks=(2, 3, 2))
    >>> y = posenc.dask.embedding_add(x, table, [9, 8, 7, 6, 5, 4])
    >>> y.compute()[3, 0].tolist()
    [19.0, 20.0]
    """
    xd = _whole_last_axis(_dask_array(a.x, "x"))
    table, positions = a.table, a.positions
    if xd.ndim < 1:
        raise ValueError("x must have shape [..., dim], got a scalar")
    if isinstance(table, da.Array):
        raise TypeError("table must be a NumPy array (array_like), not a dask array: compute it first")
    tab = _checks.as_array(table, "table")
    lead = tuple(xd.shape[:-1])
    # dtype, dim and table checks: the in-memory call on zero rows of x.
    _posenc.embedding_add(_zeros((0, xd.shape[-1]), xd.dtype), tab, np.zeros(0, np.intp))
    if isinstance(positions, da.Array):
        if positions.dtype.kind not in "iu":
            raise TypeError(f"positions must be integers, got dtype {positions.dtype}")
        k = positions.ndim
        if k > len(lead) or tuple(positions.shape) != lead[len(lead) - k:]:
            raise ValueError(f"positions must have shape x.shape[:-1] = {lead} or a trailing part of it, "
                             f"got shape {tuple(positions.shape)}")
        pd = positions.rechunk(xd.chunks[xd.ndim - 1 - k:xd.ndim - 1])[(..., None)]

        def block_lazy(xb: np.ndarray, pb: np.ndarray) -> np.ndarray:
            return _one_thread(lambda: _posenc.embedding_add(xb, tab, pb[..., 0]))  # type: ignore[no-any-return]

        return da.map_blocks(block_lazy, xd, pd, dtype=xd.dtype, meta=np.empty((0,) * xd.ndim, xd.dtype))
    pos = _checks.as_array(positions, "positions")
    # Shape against the whole x, integer kind and range: the in-memory call on x with no features.
    _posenc.embedding_add(np.broadcast_to(_zeros((), xd.dtype), lead + (0,)), tab[:, :0], pos)
    axes = slice(xd.ndim - 1 - pos.ndim, xd.ndim - 1)  # x's axes that positions spans (not xd: the whole input)

    def block(xb: np.ndarray, block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
        loc = _location(block_info)[axes]
        pb = pos[tuple(slice(lo, hi) for lo, hi in loc)]
        return _one_thread(lambda: _posenc.embedding_add(xb, tab, pb))  # type: ignore[no-any-return]

    return da.map_blocks(block, xd, dtype=xd.dtype, meta=np.empty((0,) * xd.ndim, xd.dtype))


# ---------------------------------------------------------------- relative biases

def _scores(scores: Any) -> Any:
    sd = _dask_array(scores, "scores")
    if sd.ndim < 3:
        raise ValueError(f"scores must have shape [..., heads, q, k], got shape {sd.shape}")
    if sd.shape[-3] == 0:
        raise ValueError(f"scores must have at least one head (scores.shape[-3] == 0), got shape {sd.shape}")
    return sd


def _relative_blocks(sd: Any, run: Callable[[np.ndarray, int, int, int, int], Any]) -> Any:
    """map_blocks of ``run(block, h0, h1, q0, k0)``: the block's first head, query and key in the whole array."""
    nd = sd.ndim

    def block(sb: np.ndarray, block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
        loc = _location(block_info)
        (h0, h1), (q0, _), (k0, _) = loc[nd - 3], loc[nd - 2], loc[nd - 1]
        return _one_thread(lambda: run(sb, h0, h1, q0, k0))  # type: ignore[no-any-return]

    return da.map_blocks(block, sd, dtype=sd.dtype, meta=np.empty((0,) * nd, sd.dtype))


@_lazy(_posenc.add_alibi, without=("num_heads",))
def add_alibi(a: Any) -> Any:
    """Lazy :func:`posenc.add_alibi` of dask ``scores`` ``[..., heads, q, k]``, chunked along any axis.

    A block of queries ``q0..`` and keys ``k0..`` is the in-memory call with
    ``offset + q0 - k0`` (query i of the block sits at ``offset + q0 + i``,
    key j at ``k0 + j``), and a block of heads ``h0..h1`` gets the slopes of
    those heads of the whole array (the default slopes depend on the total
    head count).

    Parameters
    ----------
    scores : dask array (or array_like) of shape [..., heads, q, k], floating
__AS_IN_MEMORY__
__LAZY_RESULT__ the scores' shape and dtype

    Examples
    --------
    >>> import dask.array as da, numpy as np, posenc, posenc.dask
    >>> s = np.random.default_rng(0).standard_normal((2, 8, 64, 64)).astype(np.float32)
    >>> y = posenc.dask.add_alibi(da.from_array(s, chunks=(1, 3, 20, 24)), offset=10)
    >>> bool(np.array_equal(y.compute(), posenc.add_alibi(s, offset=10)))
    True
    """
    sd = _scores(a.scores)
    heads = sd.shape[-3]
    if a.slopes is None:
        values = _posenc.alibi_slopes(heads, dtype=np.float64)
    else:
        if isinstance(a.slopes, da.Array):
            raise TypeError("slopes must be a NumPy array (array_like), not a dask array")
        values = _checks.as_array(a.slopes, "slopes")
    # Every check with the whole head count: the in-memory call on one query and key per head.
    options = _passed_on(a, "scores", "offset", "slopes")
    _posenc.add_alibi(_zeros((heads, 1, 1), sd.dtype), offset=a.offset, slopes=a.slopes, **options)
    start = int(a.offset)

    def run(sb: np.ndarray, h0: int, h1: int, q0: int, k0: int) -> Any:
        return _posenc.add_alibi(sb, offset=start + q0 - k0, slopes=values[h0:h1], **options)

    return _relative_blocks(sd, run)


@_lazy(_posenc.add_t5_bias, without=("num_heads",))
def add_t5_bias(a: Any) -> Any:
    """Lazy :func:`posenc.add_t5_bias` of dask ``scores`` ``[..., heads, q, k]``, chunked along any axis.

    A block of queries ``q0..`` and keys ``k0..`` is the in-memory call with
    ``offset + q0 - k0``; a block of heads ``h0..h1`` uses the table's columns
    ``h0..h1``.

    Parameters
    ----------
    scores : dask array (or array_like) of shape [..., heads, q, k], floating
    table : array_like of shape [num_buckets, heads], floating
        A NumPy table (it goes into the graph once).
__AS_IN_MEMORY__
__LAZY_RESULT__ the scores' shape and dtype

    Examples
    --------
    >>> import dask.array as da, numpy as np, posenc, posenc.dask
    >>> rng = np.random.default_rng(0)
    >>> s = rng.standard_normal((2, 4, 50, 70)).astype(np.float32)
    >>> table = rng.standard_normal((32, 4)).astype(np.float32)
    >>> y = posenc.dask.add_t5_bias(da.from_array(s, chunks=(1, 3, 16, 16)), table, offset=20)
    >>> bool(np.array_equal(y.compute(), posenc.add_t5_bias(s, table, offset=20)))
    True
    """
    sd = _scores(a.scores)
    if isinstance(a.table, da.Array):
        raise TypeError("table must be a NumPy array (array_like), not a dask array: compute it first")
    tab = _checks.as_array(a.table, "table")
    options = _passed_on(a, "scores", "table", "offset")
    _posenc.add_t5_bias(_zeros((sd.shape[-3], 1, 1), sd.dtype), tab, offset=a.offset, **options)
    start = int(a.offset)

    def run(sb: np.ndarray, h0: int, h1: int, q0: int, k0: int) -> Any:
        return _posenc.add_t5_bias(sb, tab[:, h0:h1], offset=start + q0 - k0, **options)

    return _relative_blocks(sd, run)
