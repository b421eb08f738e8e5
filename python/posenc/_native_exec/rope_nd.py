"""Native executors of the multi-axis rotary plans.

Until the rope kernel's coords·freqs angle source lands (cpp/src/rope.cpp),
they run the NumPy executors: the API is final, the speed is not.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import _api
from .._plans.rope_nd import RopeNdCosSin, RopeNdRotation


@_api.native(RopeNdRotation)
def rotate(plan: RopeNdRotation) -> Any:
    return _api.REFERENCE[RopeNdRotation](plan)


@_api.native(RopeNdCosSin)
def cos_sin(plan: RopeNdCosSin) -> Tuple[np.ndarray, np.ndarray]:
    result: Tuple[np.ndarray, np.ndarray] = _api.REFERENCE[RopeNdCosSin](plan)
    return result
