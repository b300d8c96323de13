"""A student's own working copy of the labs: ``work/<lab>/``, made once, never overwritten by a course update.

``labs/`` is generated and tracked by git, so a student who edits it there gets a merge conflict at the next
``git pull``. ``make lab`` instead works in ``work/`` (ignored by git)::

    python -m course_dist.workcopy            # copy every released lab not yet in work/; report updates
    python -m course_dist.workcopy --lab lab02

A lab already in ``work/`` is never touched. When the release changed since it was copied, the new release is
put beside it as ``<lab>.updated.ipynb`` (the student's notebook stays as it is) and the command says so.
``work/<lab>/`` is also exactly what a student hands in (see the README, "Submitting").

Two things make JupyterLab show a student only what they use:

- ``work/.jupyter/`` is the JupyterLab configuration ``make lab`` starts with (``JUPYTER_CONFIG_DIR``):
  nbgrader's instructor tools are off (its lab extension - Create Assignment, Validate, the Nbgrader menu -
  and its server extensions - formgrader, assignment and course lists), and so is JupyterLab's news pop-up.
- Each copied notebook records this interpreter's kernel ``language_info``: JupyterLab writes the kernel's
  ``language_info`` into a notebook when the kernel connects, so a notebook whose value differs (the release
  carries only ``{"name": "python"}``, not knowing the student's Python) opens already marked modified.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAMP = ".release-sha256"  # digest of the release a working copy was made from
JUPYTER_DIR = ".jupyter"  # under work/: make lab's JUPYTER_CONFIG_DIR

# What the student's JupyterLab leaves out (nbgrader 0.9.6, JupyterLab 4.6). Its lab extension and the server
# extensions it enables in <venv>/etc/jupyter/jupyter_server_config.d/nbgrader.json are instructor tools.
DISABLED_LAB_EXTENSIONS = ("@jupyter/nbgrader", "@jupyterlab/apputils-extension:announcements")
DISABLED_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kernel_language_info() -> dict:
    """The ``language_info`` the course's kernel (ipykernel on this interpreter) reports to JupyterLab."""
    from ipykernel.ipkernel import IPythonKernel

    return json.loads(json.dumps(IPythonKernel.language_info))  # a plain copy of the class attribute


def _match_kernel(notebook: Path) -> None:
    """Give ``notebook`` this interpreter's kernel ``language_info``, so that JupyterLab opens it unmodified.

    A file that is not a notebook's JSON is left as it is (JupyterLab would not open it as a notebook either).
    """
    try:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return
    if not isinstance(nb, dict) or not isinstance(nb.get("metadata"), dict):
        return
    nb["metadata"]["language_info"] = kernel_language_info()
    # nbformat's own layout (indent 1, sorted keys, trailing newline): a diff against the release stays small
    notebook.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def write_jupyter_config(work: Path) -> Path:
    """Write ``work/.jupyter/`` (make lab's ``JUPYTER_CONFIG_DIR``): nbgrader's tools and the news pop-up off.

    Keys already in those files (a student's own choices) are kept; only the course's entries are set.
    Returns the folder.
    """
    cfg = work / JUPYTER_DIR
    page = cfg / "labconfig" / "page_config.json"
    server = cfg / "jupyter_server_config.json"
    page_cfg = json.loads(page.read_text()) if page.is_file() else {}
    page_cfg.setdefault("disabledExtensions", {}).update(dict.fromkeys(DISABLED_LAB_EXTENSIONS, True))
    server_cfg = json.loads(server.read_text()) if server.is_file() else {}
    exts = server_cfg.setdefault("ServerApp", {}).setdefault("jpserver_extensions", {})
    exts.update(dict.fromkeys(DISABLED_SERVER_EXTENSIONS, False))
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(json.dumps(page_cfg, indent=2, sort_keys=True) + "\n")
    server.write_text(json.dumps(server_cfg, indent=2, sort_keys=True) + "\n")
    return cfg


def copy_lab(lab_dir: Path, work: Path, skeleton: Path | None = None) -> str:
    """Make or refresh-check ``work/<lab>/`` from ``lab_dir``; returns a one-line report."""
    lab = lab_dir.name
    notebook = lab_dir / f"{lab}.ipynb"
    if not notebook.is_file():
        raise ValueError(f"{lab_dir} has no {notebook.name}: run `make release` first")
    dest = work / lab
    new = _digest(notebook)
    if not dest.exists():
        shutil.copytree(lab_dir, dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        if skeleton is not None and skeleton.is_dir():  # the homework package the notebook drives
            shutil.copytree(skeleton, dest / skeleton.name, ignore=shutil.ignore_patterns("__pycache__"))
        _match_kernel(dest / notebook.name)
        (dest / STAMP).write_text(new + "\n")
        return f"{lab}: new working copy in {dest}"
    stamp = dest / STAMP
    old = stamp.read_text().strip() if stamp.exists() else ""
    if old == new:
        return f"{lab}: {dest} is up to date (your work is untouched)"
    shutil.copy2(notebook, dest / f"{lab}.updated.ipynb")
    _match_kernel(dest / f"{lab}.updated.ipynb")
    stamp.write_text(new + "\n")
    return (
        f"{lab}: the course updated this lab; your notebook is untouched and the new release is "
        f"{dest / (lab + '.updated.ipynb')} (copy over what you need)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m course_dist.workcopy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--labs", type=Path, default=REPO / "labs", help="the release (default: labs/)")
    p.add_argument("--work", type=Path, default=REPO / "work", help="working copies (default: work/)")
    p.add_argument("--lab", action="append", help="only this lab (repeatable)")
    ns = p.parse_args(argv)
    if not ns.labs.is_dir():
        p.error(f"no release at {ns.labs}: run `make release`")
    ns.work.mkdir(parents=True, exist_ok=True)
    labs = sorted(d for d in ns.labs.iterdir() if d.is_dir() and (not ns.lab or d.name in ns.lab))
    if ns.lab and len(labs) != len(ns.lab):
        p.error(
            f"unknown lab(s) {sorted(set(ns.lab) - {d.name for d in labs})}; released: "
            f"{sorted(d.name for d in ns.labs.iterdir() if d.is_dir())}"
        )
    for d in labs:
        # The course repository keeps the skeleton at its root; the student distribution ships it inside
        # labs/homework/, where copying the lab folder brings it along.
        skeleton = REPO / "homework" if d.name == "homework" else None
        sys.stdout.write(copy_lab(d, ns.work, skeleton) + "\n")
    write_jupyter_config(ns.work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
