"""Type stubs for posenc's compiled module ``posenc._native`` (internal).

Every function here is thin glue around one kernel: it checks shapes, dtypes
and strides (so a kernel never reads or writes out of bounds), releases the
GIL and runs. Arguments arrive already normalised by the public Python API:
positions and frequencies as C-contiguous float64 vectors, outputs allocated
with the exact shape and dtype. ``tests/test_ecosystem.py`` checks that this
file names every function of the built module with the same parameters.
"""

from typing import Any, List, Optional

import numpy as np
from numpy.typing import NDArray

_Array = NDArray[Any]

__version__: str

# Dispatch, threads, fork safety.
def active_isa() -> str: ...
def available_isas() -> List[str]: ...
def select_isa(name: str) -> None: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def have_openmp() -> bool: ...
def after_fork_in_child() -> None: ...

# Sinusoidal.
def sinusoidal_table(
    out: _Array, positions: Optional[_Array], start: float, inv_freq: _Array, interleaved: bool
) -> None: ...
def add_sinusoidal(
    x: _Array,
    out: _Array,
    positions: Optional[_Array],
    start: float,
    inv_freq: _Array,
    interleaved: bool,
    scale: float,
) -> None: ...

# Rotary (RoPE).
def apply_rope(
    x: _Array,
    out: _Array,
    seq_axis: int,
    grouped: bool,
    positions: Optional[_Array],
    start: float,
    inv_freq: _Array,
    pair_axis: Optional[_Array],
    scale: float,
    interleaved: bool,
    inverse: bool,
    k: Optional[_Array] = None,
    out_k: Optional[_Array] = None,
) -> None: ...
def rope_cos_sin(
    out_cos: _Array,
    out_sin: _Array,
    positions: Optional[_Array],
    start: float,
    inv_freq: _Array,
    scale: float,
) -> None: ...
def apply_rope_nd(
    x: _Array,
    out: _Array,
    seq_axis: int,
    grouped: bool,
    coords: _Array,
    freqs: _Array,
    interleaved: bool,
    inverse: bool,
) -> None: ...
def apply_rope_tables(
    x: _Array,
    out: _Array,
    seq_axis: int,
    grouped: bool,
    cos: _Array,
    sin: _Array,
    scale: float,
    interleaved: bool,
    inverse: bool,
    k: Optional[_Array] = None,
    out_k: Optional[_Array] = None,
) -> None: ...
def rope_nd_cos_sin(out_cos: _Array, out_sin: _Array, coords: _Array, freqs: _Array) -> None: ...

# Relative positions: Toeplitz rows and T5 bucket boundaries.
def toeplitz_copy(out: _Array, lut: _Array, step: int) -> None: ...
def toeplitz_add(x: _Array, out: _Array, lut: _Array) -> None: ...
def alibi_add(x: _Array, out: _Array, slopes: _Array, offset: int, symmetric: bool) -> None: ...
def t5_thresholds(half: int, max_exact: int, max_distance: int) -> NDArray[np.int64]: ...

# Learned tables.
def embedding_lookup(table: _Array, positions: _Array, out: _Array) -> None: ...
def embedding_add(x: _Array, table: _Array, positions: _Array, out: _Array) -> None: ...
def embedding_grad(grad: _Array, positions: _Array, out: _Array) -> None: ...
def resample(src: _Array, out: _Array, index: _Array, weights: _Array) -> None: ...

# Vision: Swin's relative position bias from per-(head, query column) lookup rows; DETR's two-table gather.
def swin_bias(x: Optional[_Array], out: _Array, lut: _Array, wh: int, ww: int) -> None: ...
def detr_gather(y_table: _Array, y_index: _Array, x_table: _Array, x_index: _Array, out: _Array) -> None: ...
# Memory ceilings for benchmarks: one pass ("fill" or "touch") with posenc's threads.
def memory_pass(a: _Array, kind: str) -> None: ...
