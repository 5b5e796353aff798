"""The no-JIT counterparts of ``intrinsics``: bit reinterpretation with numpy views, so
runtime helpers that call ``_bitcast_float32(...)`` run unchanged as plain Python."""

from __future__ import annotations

import numpy as np


def _view(dtype):
    def bitcast(x):
        return np.array([x]).view(dtype)[0]

    return bitcast


_bitcast_int32 = _view(np.int32)
_bitcast_uint32 = _view(np.uint32)
_bitcast_float32 = _view(np.float32)
_bitcast_int64 = _view(np.int64)
_bitcast_uint64 = _view(np.uint64)
_bitcast_float64 = _view(np.float64)

def _borrowed(value):
    return value


def _alive(value):
    return None


__all__ = ["_alive", "_bitcast_float32", "_bitcast_float64", "_bitcast_int32", "_bitcast_int64",
           "_bitcast_uint32", "_bitcast_uint64", "_borrowed"]
