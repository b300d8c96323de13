"""Which of the trusted kernel's names travel to the student process before an answer cell (issue 32).

A notebook gives an answer cell every name the cells before it defined (imports, course helpers, data). In a
grading run those live in the trusted kernel; before each answer cell :func:`course_dist.student.run_answer`
pickles over the ones the cell can read, and only those that changed since they were last sent::

    sync = NameSync()
    sync.context(user_ns, "def f(x):\\n    return x + offset\\n")   # -> {"offset": b"..."}
    sync.context(user_ns, "g = f(1)\\n")   # -> {} while offset is unchanged; {"offset": ...} once rebound

What a cell can read comes from a parse of its text (never run): every identifier in it, function bodies
included, accumulated over the answer cells so far (a function defined earlier reads them when called later).
A cell that does not parse (IPython magics) or reads names dynamically (``globals()``, ``eval``, ``vars``,
``get_ipython``, ``__main__``, ...) gets every name, as before this filter. "Changed" is identity: the value
last sent is held, so a rebound name goes again and an object mutated in place does not.
"""

from __future__ import annotations

from typing import Any

MAX_BYTES = 16 << 20  # a name whose pickle is larger stays behind (the answer cell may not need it)
SKIP = ("In", "Out", "get_ipython", "exit", "quit", "open")
# what reads names a parse cannot see: a cell using one of these gets every name
DYNAMIC = frozenset({"globals", "locals", "vars", "eval", "exec", "get_ipython", "dir", "__main__",
                     "__builtins__", "__dict__", "f_globals", "__globals__", "user_ns"})


def reads(source: str) -> set[str] | None:
    """The names ``source`` can read, from a parse; None (every name) where it does not parse or reads
    names dynamically."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # magics, NUL bytes, absurd nesting
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in DYNAMIC:
            names.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "__main__":
            names.add("__main__")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in DYNAMIC:
            names.add(node.value)
    return None if names & DYNAMIC else names


class NameSync:
    """The trusted kernel's record of what the student process already holds."""

    def __init__(self) -> None:
        self.sent: dict[str, Any] = {}  # name -> the value last sent (or found not to travel), held
        self.wanted: set[str] = set()  # the names any answer cell so far can read

    def holds(self, name: str, value: Any) -> None:
        """The student process holds ``value`` as ``name`` already (a name its answer cell bound)."""
        self.sent[name] = value

    def context(self, user_ns: dict[str, Any], source: str | None) -> dict[str, bytes]:
        """Pickles of the names of ``user_ns`` that the answer cell ``source`` (or an earlier one) can read
        and that changed since they were last sent; ``source`` None: every name. What cannot be pickled is
        left out (and tried again only once rebound)."""
        import cloudpickle

        cell = None if source is None else reads(source)
        if cell is not None:
            self.wanted |= cell
        out = {}
        for name, value in list(user_ns.items()):
            if name.startswith("_") or name in SKIP or (cell is not None and name not in self.wanted):
                continue
            if name in self.sent and self.sent[name] is value:
                continue
            self.sent[name] = value
            try:
                blob = cloudpickle.dumps(value)
            except Exception:  # noqa: BLE001, S112 - a course object that does not travel
                continue
            if len(blob) <= MAX_BYTES:
                out[name] = blob
        return out
