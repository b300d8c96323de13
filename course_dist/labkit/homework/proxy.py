"""The graded package behind the process boundary (issue 32): the trusted kernel's stand-in for it.

In the trusted kernel of a split grading run (``course_dist.student.active()``) :func:`~.adapter.package`
imports nothing: it returns a :class:`StudentPackage`, and every attribute path in it (``hw.trainer.train``,
``hw.grad_accum_steps``) is a :class:`StudentRef` resolved in the student process, where the package really
is imported:

- an attribute that is data there (``hw.metrics.STEP_FIELDS``) comes back as its value; a module, function,
  class or other object stays a reference;
- calling a reference runs the call over there (:func:`course_dist.student.student_side`): a data result
  comes back (:mod:`course_dist._wire`), an object that cannot cross as an :class:`Opaque` description, an
  exception as an exception (the wire rebuilds the package's own classes on their nearest builtin or course
  base, message kept: ``ConfigMismatchError(ValueError)`` is still caught as a ``ValueError``);
- pickled (a ``course_dist.launch`` payload, the arguments of a labkit function or of an
  ``on_student_side`` check) a reference marks the payload as student code and resolves to the real object
  over there, so such launches and functions run in the student process as a whole.

Outside a split run none of this is used: ``package()`` returns the imported module itself.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from course_dist import student
from course_dist.student import StudentProxy


@dataclass
class Opaque:
    """What a call in the student process returned when it is not data (an instance of the package's
    classes): its type and repr, for messages. Use an ``on_student_side`` check to work with such objects."""

    type: str
    text: str


def _resolve(path: str) -> Any:
    """(Student process) the object at ``path`` (``"homework.trainer.train"``) in the imported package."""
    from .adapter import package

    head, *rest = path.split(".")
    obj: Any = package()
    if obj.__name__ != head:
        raise RuntimeError(f"{path!r} is not in the graded package {obj.__name__!r}")
    done = head
    for part in rest:
        done = f"{done}.{part}"
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if not isinstance(obj, ModuleType):
                raise
            obj = importlib.import_module(done)  # a submodule the package does not import itself
    return obj


def _describe(path: str) -> tuple[str, Any]:
    """(Student process) ``("data", value)`` where the attribute is data that crosses, else
    ``("ref", None)``."""
    from course_dist import _wire

    obj = _resolve(path)
    if isinstance(obj, (ModuleType, type)) or callable(obj):
        return "ref", None
    try:
        _wire.encode(obj)
    except _wire.WireError:
        return "ref", None
    return "data", obj


def _call(path: str, args: tuple, kwargs: dict) -> Any:
    """(Student process) call the object at ``path``; data comes back, an object as :class:`Opaque`."""
    from course_dist import _wire

    out = _resolve(path)(*args, **kwargs)  # an exception travels back (the wire keeps its trusted base)
    try:
        _wire.encode(out)
    except _wire.WireError:
        return Opaque(f"{type(out).__module__}.{type(out).__qualname__}", repr(out)[:300])
    return out


def _probe(name: str) -> str:
    """(Student process) import the graded package (its import error travels back) and return its name."""
    from .adapter import package

    mod = package()
    if mod.__name__ != name:
        raise RuntimeError(f"the graded package is {mod.__name__!r}, not {name!r}")
    return name


class StudentRef(StudentProxy):
    """(Trusted kernel) an attribute path in the student's package, resolved in the student process."""

    def __init__(self, path: str) -> None:
        super().__init__(path.rsplit(".", 1)[-1], "object")
        self._path = path
        self._attrs: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # dunder/private probes (pickle, IPython display, copy): never a round trip
            raise AttributeError(name)
        if name not in self._attrs:
            path = f"{self._path}.{name}"
            try:
                kind, value = student.student_side(_describe, path)
            except AttributeError as exc:
                raise AttributeError(f"{self._path} has no attribute {name!r} ({exc})") from None
            self._attrs[name] = value if kind == "data" else StudentRef(path)
        return self._attrs[name]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return student.student_side(_call, self._path, args, kwargs)

    def __reduce__(self) -> tuple:
        student._seen.flag = True  # a launch that ships this must run where the student's code lives
        return (_resolve, (self._path,))

    def __repr__(self) -> str:
        return f"<student {self._path}>"


class StudentPackage(StudentRef):
    """(Trusted kernel) the graded package itself: ``hw`` in the notebook."""

    def __repr__(self) -> str:
        return f"<student package {self._path}>"


class _Fence:
    """(Trusted kernel of a split run) refuses to import the graded package here: its cwd may hold the
    submitted folder, and nothing of the student's may run in this process."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.split(".")[0] == self.name:
            raise ImportError(f"{fullname!r} is the student's package: in grading it runs only in the "
                              "student process (use the notebook's `hw`)")


def stand_in(name: str) -> StudentPackage:
    """(Trusted kernel of a split run) the package ``name`` as a :class:`StudentPackage`, after the student
    process imported it (an import error - a missing folder, a syntax error - is raised here, as an import
    in place would). From then on an import of ``name`` in this process is refused (:class:`_Fence`)."""
    import sys

    if not any(isinstance(f, _Fence) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _Fence(name))
    student.student_side(_probe, name)
    return StudentPackage(name)


def is_stand_in(obj: Any) -> bool:
    return isinstance(obj, StudentRef)


