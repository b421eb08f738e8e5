"""Hostile-input specs of the rotary, relative and learned families (see tests/test_arguments.py)."""

from __future__ import annotations

from typing import Callable, Dict

from hostile import Spec

FAMILY_SPECS: Dict[str, Callable[[], Spec]] = {}
