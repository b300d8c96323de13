"""One submission, one process: nbgrader autograde + feedback for a single student x lab.

Started by :mod:`autograder.grade` in its own session (``start_new_session=True``) so that the parent can
kill the
whole tree on the wall-clock cap; nbgrader aborts a whole run on one bad notebook (measured), so one call
grades one
submission. Usage (internal)::

    python -m autograder.worker spec.json     # writes spec["result"] (JSON: success, log, error)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from autograder.config import CourseConfig


def run(spec: dict) -> dict:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    from autograder.nbgrader_ext import capture, nbgrader_config

    cfg = CourseConfig(**spec["config"])
    student, lab, db = spec["student"], spec["lab"], Path(spec["db"])
    c = nbgrader_config(cfg, db_path=db)
    c.CourseDirectory.submitted_directory = spec["submitted"]  # absolute: <submissions>/<student>/<lab>/
    # A previous grading of this student in the copied gradebook must not leak into this one.
    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            gb.remove_submission(lab, student)
        except MissingEntry:
            pass
    out: dict = {"student": student, "lab": lab}
    t0 = time.monotonic()
    coursedir = CourseDirectory(config=c)
    coursedir.assignment_id, coursedir.student_id = lab, student
    app = Autograde(coursedir=coursedir, config=c)
    app.force, app.create_student = True, True
    res = capture(app)
    out.update(success=bool(res["success"]), log=res.get("log", ""), error=res.get("error", ""))
    out["autograde_s"] = time.monotonic() - t0
    if spec.get("feedback", True) and out["success"]:
        t1 = time.monotonic()
        fb = GenerateFeedback(coursedir=coursedir, config=c)
        fb.force = True
        fres = capture(fb)
        out["feedback_ok"] = bool(fres["success"])
        out["feedback_log"] = "" if fres["success"] else fres.get("log", "") + fres.get("error", "")
        out["feedback_s"] = time.monotonic() - t1
    return out


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    out = run(spec)
    tmp = Path(spec["result"] + ".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(spec["result"])  # atomic: the parent never reads half a result
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
