"""The trust table (issue 32): every hidden check of every lab, where its value is produced and what a grade
may rest on. ``python -m autograder.trust`` prints it; DESIGN.md holds it between markers and
``tests/test_trust_table.py`` fails when the two differ (regenerate with ``python -m autograder.trust
--write``).

Each hidden check is one recorder call (``ev.equal``/``ev.close``/``ev.rule``) in a test cell's hidden part.
Its value is produced where the code that computes it runs:

* **student process** - in a lab with the process boundary (rubric ``process_boundary: true``), the
  student's functions and the ranks they launch run in the sandboxed student process; the trusted kernel
  records what comes back (data only) and the judge compares it with the reference run's value (a process
  that never ran submitted code). A wrong value cannot pass; a forged *input* cannot either, because the
  trusted kernel chose the input. **trusted**.
* **measured in the student process** - a number the student's process measures about itself (step times,
  the tensor ledger's peaks, bytes counted by an in-process recorder, a checkpoint drill's recorded file
  protocol) and the card figures checked against it. Nothing outside that process observes it yet, so the
  grade may not rest on it alone: **advisory** until an outside observation (cgroup memory peak, socket
  counters, strace) cross-checks it.
* **same process (no boundary)** - a lab graded in one sandboxed kernel (its rubric turns the boundary
  off; none today - the homework's package runs in the student process too): **scan-dependent** - the
  static scan's findings withhold points there.

A check is classed as a measurement when its key or rule names one (:data:`MEASURED`): the rule is stated
here so that a reviewer can disagree with a row, not hidden in code.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

from autograder.config import CourseConfig
from autograder.rubrics import load_rubric
from autograder.source import BEGIN_HIDDEN, END_HIDDEN, grade_id, nbgrader_meta, read_source

BEGIN, END = "<!-- trust-table:begin -->", "<!-- trust-table:end -->"
MEASURED = re.compile(
    r"\b(peak|peaks|bytes|time|times|seconds|ms|speed|throughput|card|measured|elapsed|bandwidth|"
    r"efficiency|recovery|protocol|fsync|scaling|straggler|step_time|break_even|fits|near)\b",
    re.IGNORECASE,
)


def _hidden(source: str) -> str:
    out, inside = [], False
    for line in source.splitlines():
        if BEGIN_HIDDEN in line:
            inside = True
        elif END_HIDDEN in line:
            inside = False
        elif inside:
            out.append(line)
    return "\n".join(out)


def _records(hidden: str) -> list[tuple[str, str, str]]:
    """(kind, key source, rule) of each recorder call in a hidden part."""
    try:
        tree = ast.parse(hidden)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("equal", "close", "rule") and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ev" and node.args):
            rule = next((k.value.value for k in node.keywords if k.arg == "rule"
                         and isinstance(k.value, ast.Constant)), "")
            found.append((node.func.attr, ast.unparse(node.args[0])[:90], str(rule)))
    return found


def rows(cfg: CourseConfig) -> list[dict]:
    out = []
    for lab in cfg.lab_ids():
        rp = cfg.rubric / f"{lab}.yaml"
        boundary = rp.exists() and load_rubric(rp).process_boundary
        nb = read_source(cfg.solutions / lab / f"{lab}.py")
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
                continue
            for kind, key, rule in _records(_hidden(cell.source)):
                words = rule.replace(".", " ").replace("_", " ")
                measured = bool(MEASURED.search(key) or MEASURED.search(words))
                if not boundary:
                    where, basis = "same process (no boundary)", "scan-dependent"
                elif measured:
                    where, basis = "measured in the student process", "advisory"
                else:
                    where, basis = "student process", "trusted"
                out.append({"lab": lab, "cell": grade_id(cell), "kind": kind, "key": key, "rule": rule,
                            "where": where, "basis": basis})
    return out


def table(cfg: CourseConfig) -> str:
    rs = rows(cfg)
    counts = Counter(r["basis"] for r in rs)
    per_lab = Counter((r["lab"], r["basis"]) for r in rs)
    labs = sorted({r["lab"] for r in rs})
    lines = [
        f"{len(rs)} hidden checks: " + ", ".join(f"{counts[b]} {b}" for b in ("trusted", "advisory",
                                                                         "scan-dependent")) + ".",
        "",
        "| lab | trusted | advisory | scan-dependent |",
        "|---|---|---|---|",
        *(f"| {lab} | {per_lab[(lab, 'trusted')]} | {per_lab[(lab, 'advisory')]} | "
          f"{per_lab[(lab, 'scan-dependent')]} |" for lab in labs),
        "",
        "| lab | test cell | record | key | rule | value produced | basis |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rs:
        key = r["key"].replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['lab']} | {r['cell']} | {r['kind']} | `{key}` | {r['rule'] or '-'} "
                     f"| {r['where']} | {r['basis']} |")
    return "\n".join(lines)


def write_design(cfg: CourseConfig) -> bool:
    """Put the table into DESIGN.md between the markers; returns whether anything changed."""
    from autograder.imports import replace_section

    return replace_section(cfg.root / "DESIGN.md", BEGIN, END, table(cfg))


def main(argv: list[str]) -> int:
    cfg = CourseConfig(root=Path(__file__).resolve().parents[1])
    if argv == ["--write"]:
        print("DESIGN.md " + ("updated" if write_design(cfg) else "already up to date"))
        return 0
    print(table(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
