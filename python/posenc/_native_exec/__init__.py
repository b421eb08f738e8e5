"""Executor 1: each plan handed to the compiled kernels (``posenc._native``).

One module per family registers, with ``posenc._api.native``, a function
per plan type: it allocates the result (or takes the caller's ``out``),
passes the plan's arrays to one kernel and returns. No validation happens
here (the plan is valid) and no maths beyond what a kernel's argument needs.
"""

from . import sinusoidal  # noqa: F401 (each module registers its family's executors)
from . import learned  # noqa: F401
from . import relative  # noqa: F401
from . import rope  # noqa: F401
from . import rope_nd  # noqa: F401
from . import vision  # noqa: F401
from .._backend import native
from .._plans.relative import authors_slopes
from .._plans.rope import default_frequencies
from .._plans.sinusoidal import x_frequencies

if native is not None:
    # The small-call lanes (cpp/bindings/lane.hpp) compute with the Python layer's own tables.
    native.lane_helpers(rope_frequencies=default_frequencies, sinusoid_frequencies=x_frequencies,
                        alibi_slopes=authors_slopes)
