"""cloudpickle that keeps each function's real file name, so remote tracebacks point at the notebook cell.

cloudpickle (3.x) rewrites ``co_filename`` of every by-value code object to ``"<dynamic-code>"`` to make
payloads deterministic. The launcher ships the cell sources (linecache entries) to the ranks; for tracebacks
to find them the code must keep its cell file name (``/tmp/ipykernel_123/456.py``), so we override only that
reducer.
"""

from __future__ import annotations

import io
import pickle
import types
from collections import ChainMap
from typing import Any

import cloudpickle
from cloudpickle import cloudpickle as _cp


def _code_reduce_keep_filename(code: types.CodeType) -> tuple:
    ctor, args = _cp._code_reduce(code)
    args = tuple(code.co_filename if isinstance(a, str) and a == "<dynamic-code>" else a for a in args)
    return ctor, args


class _Pickler(cloudpickle.Pickler):
    dispatch_table = ChainMap(
        {types.CodeType: _code_reduce_keep_filename}, cloudpickle.Pickler.dispatch_table
    )


def dumps(obj: Any) -> bytes:
    """cloudpickle.dumps, but code objects keep ``co_filename``."""
    with io.BytesIO() as f:
        _Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
        return f.getvalue()


loads = cloudpickle.loads
