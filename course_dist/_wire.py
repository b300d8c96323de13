"""A data-only wire format: what the student process sends back to the trusted side (issue 32).

Decoding runs no code of the sender's choosing: no pickle, and the only modules a name in the data can import
are the course's own (``course_dist.*``: dataclasses and exceptions are rebuilt from course classes only,
exceptions otherwise as builtins or ``StudentError``). What
crosses: ``None``, ``bool``, ``int``, ``float`` (nan and inf included), ``str``, ``bytes``, lists, tuples,
sets, dicts (any of these as keys), ``torch.Tensor`` (CPU, any dtype), ``torch.dtype``, ``torch.Size``,
``torch.device``, paths, numpy arrays and scalars, pandas ``DataFrame`` and ``Series``, course dataclasses
(``course_dist.card.Limit``/``SolutionCard`` and labkit results) and exceptions. Anything else is refused
with the type's name::

    blob = encode({"loss": torch.ones(2), "ok": True})
    decode(blob)        # -> {'loss': tensor([1., 1.]), 'ok': True}

Layout: 8-byte big-endian header length, a JSON header, then the tensors' raw bytes back to back.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import struct
from pathlib import Path, PurePath
from typing import Any

# dataclasses and exceptions the trusted side may rebuild (module prefixes of the course's own code)
TRUSTED_PREFIXES = ("course_dist.",)
MAX_DEPTH = 64


class WireError(TypeError):
    """A value that cannot cross between the student process and the grader; the message names it."""


def _float(x: float) -> Any:
    return x if math.isfinite(x) else {"f": repr(x)}


class _Encoder:
    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self.offset = 0

    def blob(self, data: bytes) -> list[int]:
        self.blobs.append(data)
        start, self.offset = self.offset, self.offset + len(data)
        return [start, len(data)]

    def enc(self, x: Any, depth: int = 0) -> Any:  # noqa: C901, PLR0911, PLR0912 - one case per type
        if depth > MAX_DEPTH:
            raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return x if abs(x) < 2**53 else {"i": str(x)}
        if isinstance(x, float):
            return _float(x)
        if type(x).__module__.startswith("torch"):  # torch.Size is a tuple: keep its type
            return self.torch(x)
        if isinstance(x, (list, tuple, set, frozenset)):
            tag = "l" if isinstance(x, list) else "t" if isinstance(x, tuple) else "s"
            items = sorted(x, key=repr) if tag == "s" else x
            return {tag: [self.enc(v, depth + 1) for v in items]}
        if isinstance(x, dict):
            return {"d": [[self.enc(k, depth + 1), self.enc(v, depth + 1)] for k, v in x.items()]}
        if isinstance(x, bytes):
            return {"b": self.blob(bytes(x))}
        if isinstance(x, PurePath):
            return {"path": str(x)}
        mod = type(x).__module__ or ""
        if mod.startswith("torch"):
            return self.torch(x)
        if mod.startswith("numpy"):
            import numpy as np

            if isinstance(x, np.ndarray):
                return {"np": self.torch_tensor(__import__("torch").as_tensor(x.copy()))}
            if isinstance(x, np.generic):
                return self.enc(x.item(), depth)
        if mod.startswith("pandas"):
            import pandas as pd

            if x is pd.NA:
                return {"na": "NA"}
            if x is pd.NaT:
                return {"na": "NaT"}
            if isinstance(x, pd.DataFrame):
                cols = [[self.enc(c, depth + 1), self.enc(x[c].tolist(), depth + 1)] for c in x.columns]
                return {"df": cols, "index": self.enc(list(x.index), depth + 1),
                        "attrs": self.enc(dict(x.attrs), depth + 1), "dtypes": [str(t) for t in x.dtypes]}
            if isinstance(x, pd.Series):
                return {"ser": self.enc(x.tolist(), depth + 1), "index": self.enc(list(x.index), depth + 1),
                        "name": self.enc(x.name, depth + 1)}
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            if not mod.startswith(TRUSTED_PREFIXES):
                raise WireError(f"a {mod}.{type(x).__qualname__} dataclass (only course dataclasses cross)")
            fields = {f.name: self.enc(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)}
            return {"dc": f"{mod}:{type(x).__qualname__}", "fields": fields}
        if isinstance(x, BaseException):
            rec = exception_record(x)
            attrs = {}
            for k, v in rec["attrs"].items():
                try:
                    attrs[k] = self.enc(v, depth + 1)
                except WireError:
                    attrs[k] = repr(v)
            return {"exc": {**rec, "attrs": {"d": [[k, v] for k, v in attrs.items()]}}}
        raise WireError(f"a value of type {mod}.{type(x).__qualname__}")

    def torch(self, x: Any) -> Any:
        import torch

        if isinstance(x, torch.Tensor):
            return {"T": self.torch_tensor(x)}
        if isinstance(x, torch.dtype):
            return {"dtype": str(x).removeprefix("torch.")}
        if isinstance(x, torch.Size):
            return {"size": list(x)}
        if isinstance(x, torch.device):
            return {"device": str(x)}
        if isinstance(x, torch.Generator):
            return {"gen": self.torch_tensor(x.get_state())}
        raise WireError(f"a value of type {type(x).__module__}.{type(x).__qualname__}")

    def torch_tensor(self, t: Any) -> dict:
        import torch

        t = t.detach().to("cpu").contiguous()
        if t.layout != torch.strided or t.is_quantized:
            raise WireError(f"a {t.layout} tensor")
        flat = t.reshape(-1)
        raw = flat.view(torch.uint8) if t.dtype != torch.bool else flat
        data = raw.numpy().tobytes() if t.numel() else b""
        return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                "grad": bool(t.requires_grad), "data": self.blob(data)}


EXCEPTION_ATTRS = ("rank", "exitcode", "signal_name", "exc_type", "remote_traceback", "others", "stdout",
                   "stderr", "trace", "timeout", "stacks", "last_collective", "finished", "culprit")


def exception_record(e: BaseException) -> dict:
    """An exception as plain values: its type's module and name, its message and simple args, the course's
    attributes (a RankError's rank and traceback, a LaunchTimeout's stacks...) and the traceback text."""
    import traceback

    attrs = {name: getattr(e, name) for name in EXCEPTION_ATTRS if getattr(e, name, None) is not None}
    args = [a if isinstance(a, (str, int, float, bool)) or a is None else repr(a) for a in e.args]
    # the classes it derives from, nearest first: the receiver rebuilds a student's own exception class as
    # one of those it trusts (``class ShapeError(ValueError)`` still satisfies ``except ValueError``)
    bases = [[c.__module__, c.__qualname__] for c in type(e).__mro__[1:] if issubclass(c, BaseException)]
    return {"module": type(e).__module__, "name": type(e).__qualname__, "message": str(e), "args": args,
            "attrs": attrs, "bases": bases, "traceback": "".join(traceback.format_exception(e))[-20_000:]}


def encode(x: Any) -> bytes:
    """``x`` as wire bytes; :class:`WireError` names what cannot cross."""
    e = _Encoder()
    head = json.dumps(e.enc(x), separators=(",", ":")).encode()
    return struct.pack(">Q", len(head)) + head + b"".join(e.blobs)


class _Decoder:
    def __init__(self, data: memoryview) -> None:
        self.data = data

    def blob(self, ref: list[int]) -> bytes:
        start, n = int(ref[0]), int(ref[1])
        if start < 0 or n < 0 or start + n > len(self.data):
            raise WireError("a blob outside the message")
        return bytes(self.data[start : start + n])

    def dec(self, x: Any, depth: int = 0) -> Any:  # noqa: C901, PLR0911, PLR0912 - one case per tag
        if depth > MAX_DEPTH + 2:
            raise WireError("message nested too deep")
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if not isinstance(x, dict) or not x:
            raise WireError(f"malformed message node {str(x)[:80]}")
        d = depth + 1
        if "l" in x:
            return [self.dec(v, d) for v in x["l"]]
        if "t" in x:
            return tuple(self.dec(v, d) for v in x["t"])
        if "s" in x:
            return {self.dec(v, d) for v in x["s"]}
        if "d" in x:
            return {_hashable(self.dec(k, d)): self.dec(v, d) for k, v in x["d"]}
        if "f" in x:
            return float(str(x["f"]))
        if "i" in x:
            return int(str(x["i"]))
        if "b" in x:
            return self.blob(x["b"])
        if "path" in x:
            return Path(str(x["path"]))
        if "na" in x:
            import pandas as pd

            return pd.NaT if x["na"] == "NaT" else pd.NA
        if "T" in x:
            return self.tensor(x["T"])
        if "np" in x:
            return self.tensor(x["np"]).numpy()
        if "dtype" in x:
            return _dtype(x["dtype"])
        if "size" in x:
            import torch

            return torch.Size([int(v) for v in x["size"]])
        if "device" in x:
            import torch

            return torch.device(str(x["device"]))
        if "gen" in x:
            import torch

            g = torch.Generator()
            g.set_state(self.tensor(x["gen"]))
            return g
        if "df" in x:
            import pandas as pd

            cols = {self.dec(k, d): self.dec(v, d) for k, v in x["df"]}
            df = pd.DataFrame(cols, index=self.dec(x["index"], d) or None)
            df.attrs.update(self.dec(x.get("attrs") or {"d": []}, d))
            for col, dtype in zip(df.columns, x.get("dtypes") or [], strict=False):
                if str(dtype) != "object" and str(df[col].dtype) != str(dtype):
                    try:  # a plain numpy/pandas dtype name, rebuilt by name (no code from the data runs)
                        df[col] = df[col].astype(str(dtype))
                    except (TypeError, ValueError):
                        pass
            return df
        if "ser" in x:
            import pandas as pd

            return pd.Series(self.dec(x["ser"], d), index=self.dec(x["index"], d) or None,
                             name=self.dec(x["name"], d))
        if "dc" in x:
            cls = trusted_class(str(x["dc"]))
            if not dataclasses.is_dataclass(cls):
                raise WireError(f"{x['dc']} is not a dataclass")
            return cls(**{k: self.dec(v, d) for k, v in x["fields"].items()})
        if "exc" in x:
            rec = dict(x["exc"])
            rec["attrs"] = self.dec(rec.get("attrs") or {"d": []}, d)
            return rebuild_exception(rec)
        raise WireError(f"unknown message tag {sorted(x)[:3]}")

    def tensor(self, spec: dict) -> Any:
        import torch

        dtype = _dtype(spec["dtype"])
        shape = [int(v) for v in spec["shape"]]
        raw = self.blob(spec["data"])
        n = math.prod(shape)
        if n == 0:
            t = torch.empty(shape, dtype=dtype)
        elif dtype == torch.bool:
            t = torch.frombuffer(bytearray(raw), dtype=torch.bool).reshape(shape).clone()
        else:
            if len(raw) != n * torch.empty((), dtype=dtype).element_size():
                raise WireError(f"tensor data of {len(raw)} bytes for shape {shape} {dtype}")
            t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).clone()
        return t.requires_grad_(True) if spec.get("grad") and t.is_floating_point() else t


def _hashable(k: Any) -> Any:
    if isinstance(k, list):
        return tuple(_hashable(v) for v in k)
    if isinstance(k, set):
        return frozenset(k)
    return k


def _dtype(name: str) -> Any:
    import torch

    dt = getattr(torch, str(name), None)
    if not isinstance(dt, torch.dtype):
        raise WireError(f"unknown dtype {name!r}")
    return dt


def trusted_class(ref: str) -> type:
    """A course class named ``module:qualname`` (only under :data:`TRUSTED_PREFIXES`)."""
    mod, _, qual = ref.partition(":")
    if not mod.startswith(TRUSTED_PREFIXES) or not qual or "." in qual:
        raise WireError(f"class {ref!r} is not a course class")
    cls = getattr(importlib.import_module(mod), qual, None)
    if not isinstance(cls, type):
        raise WireError(f"{ref!r} is not a class")
    return cls


class StudentError(Exception):
    """Marks an exception whose own class is the student's (neither builtin nor the course's): it is rebuilt
    as a subclass of this and of the nearest base the trusted side knows, under the original class name."""


def _trusted_exception_class(mod: str, name: str) -> Any:
    """The builtin or course exception class ``mod.name``, else None (nothing else is ever imported)."""
    import builtins

    cls: Any = None
    if mod == "builtins":
        cls = getattr(builtins, name, None)
    elif mod.startswith(TRUSTED_PREFIXES):
        try:
            cls = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            cls = None
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def rebuild_exception(rec: dict) -> BaseException:
    """The exception a record describes, as an instance of a builtin or course type; a student's own class
    becomes a class of the same name deriving from :class:`StudentError` and its nearest trusted base (so
    ``except ValueError`` still catches a ``ShapeError(ValueError)``; no class named by the data is imported).
    ``__student_traceback__`` keeps the original traceback text."""
    mod, name, msg = str(rec.get("module")), str(rec.get("name")), str(rec.get("message", ""))
    args = [a for a in rec.get("args", [])] or [msg]
    cls = _trusted_exception_class(mod, name)
    if cls is None:
        bases: list[type] = []  # the trusted classes it derives from, none a subclass of one before it
        for m, n in rec.get("bases") or []:
            b = _trusted_exception_class(str(m), str(n))
            if b is not None and not any(issubclass(x, b) for x in bases):
                bases.append(b)
        bases = [b for b in bases if b is not StudentError] or [Exception]
        try:
            cls = type(name.rsplit(".", 1)[-1], (StudentError, *bases), {"__module__": mod})
        except TypeError:  # bases whose layouts cannot combine: the base alone, the name in the message
            cls, args = StudentError, [f"{name}: {msg}"]
    try:
        exc: BaseException = cls.__new__(cls)
        BaseException.__init__(exc, *args)
    except Exception:  # an exotic signature: the message survives
        exc = StudentError(f"{name}: {msg}")
    for k, v in (rec.get("attrs") or {}).items():
        if v is not None:
            try:
                setattr(exc, k, v)
            except (AttributeError, TypeError):
                pass
    exc.__student_traceback__ = str(rec.get("traceback", ""))  # type: ignore[attr-defined]
    return exc


def decode(data: bytes) -> Any:
    """The value ``data`` (from :func:`encode`) holds; :class:`WireError` on anything malformed."""
    view = memoryview(data)
    if len(view) < 8:
        raise WireError("message shorter than its header")
    (n,) = struct.unpack(">Q", view[:8])
    if 8 + n > len(view):
        raise WireError("message header longer than the message")
    try:
        head = json.loads(bytes(view[8 : 8 + n]))
    except ValueError as exc:
        raise WireError(f"message header is not JSON: {exc}") from None
    return _Decoder(view[8 + n :]).dec(head)
