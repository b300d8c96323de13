"""Every shell command in the READMEs' code blocks is exercised, so none drifts from the code.

Each command of a ```bash block (the course README and the student distribution's README) is either run
here, cheap and safe (`--help`, `make -n ...`, `student-repo` into a temporary folder, `git init`/`commit`
there), or listed in `SKIPPED` with the reason it is not run (a class to grade, a torchrun job, a second
machine, the network). A skipped command still has its arguments parsed by the program it calls (the
autograder CLI, torchrun, the trainer, course_dist.run), so a renamed flag fails here. A command
that no rule matches fails the test: a new README command must be made runnable here or skipped with a reason.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.student_repo import REMOTE_PLACEHOLDER, build_student_repo

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
READMES = {"course": ROOT / "README.md", "student": ROOT / "autograder" / "student_template" / "README.md"}
_RAN: dict[
    tuple[str, str], subprocess.CompletedProcess
] = {}  # (README, command) -> its run, for later checks

# (pattern, reason): commands not run; their arguments are still parsed (see _parse)
SKIPPED: list[tuple[str, str]] = [
    (
        r"^git clone ",
        "clones the published student repository (network); student-repo builds it here instead",
    ),
    (r"git push", "pushes to the course's remote (network, credentials)"),
    (r"-m autograder grade ", "grades a class through nbgrader in the sandbox (minutes per submission)"),
    (r"-m autograder merge ", "needs the outputs of a sharded grading run"),
    (r"-m autograder manual ", "reads and writes the course gradebook of a graded class"),
    (r"-m autograder export\b", "rewrites build/grades.csv and every graded student's feedback"),
    (r"-m autograder mutants\b", "checks every known-wrong answer (minutes per lab)"),
    (r"jupyter lab\b", "starts a JupyterLab server that runs until stopped"),
    (r"^srun ", "needs a SLURM allocation"),
    (r"--nnodes 2", "needs two machines"),
    (
        r"torchrun --standalone .*course_dist\.run",
        "a 2-rank torchrun job (~7 s each on 2 cores); tests/test_course_dist_run.py runs train_demo under "
        "torchrun, with a SIGKILL and a restart",
    ),
    (
        r"-m homework\.train --run-dir",
        "trains: the skeleton raises NotImplementedError until the student's tasks are done",
    ),
]


def commands(path: Path) -> list[str]:
    """The shell commands of ```bash blocks: continuation lines joined, comment lines and comments dropped."""
    out: list[str] = []
    for block in re.findall(r"^[ \t]*```bash\n(.*?)^[ \t]*```", path.read_text(), flags=re.S | re.M):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def _skip_reason(cmd: str) -> str | None:
    return next((why for pattern, why in SKIPPED if re.search(pattern, cmd)), None)


# ---- parsing what is not run ----------------------------------------------------------------------------


def _autograder_parse(argv: list[str]) -> None:
    """`python -m autograder ...`: each `[--flag VALUE]` group's flag must exist; the rest must parse."""
    from autograder.__main__ import build_parser

    text = " ".join(argv)
    optional = re.findall(r"\[([^\]]*)\]", text)
    parser = build_parser()
    args = shlex.split(re.sub(r"\[[^\]]*\]", " ", text))
    parser.parse_args(args)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args[0]]
    for group in optional:
        flag = group.split()[0]
        assert flag in sub._option_string_actions, (
            f"autograder {args[0]}: no option {flag} (README: [{group}])"
        )


def _module_parse(module: str, args: list[str]) -> None:
    if module in ("homework.train", "fttrainer.train"):
        from homework.train import cli_parser  # the skeleton's: the same parser as the reference's

        cli_parser().parse_args(args)
    elif module == "course_dist.run":
        from course_dist.run import resolve

        if args and args[0].startswith("course_dist."):
            resolve(args[0])
    elif module == "autograder":
        _autograder_parse(args)
    else:
        raise AssertionError(f"no parser known for -m {module}")


def _parse(cmd: str) -> None:
    """Parse a command's arguments with the parser of the program it calls (SystemExit on a bad one)."""
    cmd = re.sub(r"\$\([^)]*\)", "HOST", cmd)  # $(scontrol ...) is one word once expanded
    if cmd.startswith("(") or cmd.startswith("git ") or re.search(r"jupyter lab\b", cmd):
        return  # git, jupyter: standard programs, flags unchanged by this course
    words = [w for w in cmd.split() if not re.fullmatch(r"[A-Z_]+=\S*", w)]  # env assignments
    if words[0] == "srun":
        words = words[words.index("torchrun") :]
    prog = Path(words[0]).name
    if prog == "torchrun":
        from torch.distributed.run import get_args_parser

        ns = get_args_parser().parse_args(shlex.split(" ".join(words[1:])))
        assert ns.module, f"torchrun without -m: {cmd}"
        _module_parse(ns.training_script, ns.training_script_args)
    elif prog.startswith("python"):
        assert words[1] == "-m", cmd
        if words[2] == "autograder":
            _autograder_parse(words[3:])
        else:
            _module_parse(words[2], shlex.split(" ".join(words[3:])))
    else:
        raise AssertionError(f"no parser known for {prog}: {cmd}")


# ---- running what is cheap ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Where each README's commands run: the course repository, and a built student repository with its
    work copies made and a .venv shim (the course's interpreter; PYTHONPATH plays the student venv's .pth)."""
    from autograder.config import CourseConfig

    student = tmp_path_factory.mktemp("docs") / "course"
    build_student_repo(CourseConfig(), student)
    env = {**os.environ, "PYTHONPATH": f"{student}{os.pathsep}{student / 'work' / 'homework'}"}
    subprocess.run(
        [sys.executable, "-m", "course_dist.workcopy"], cwd=student, env=env, check=True, timeout=120
    )
    shim = student / ".venv" / "bin"
    shim.mkdir(parents=True)
    for name in ("python", "torchrun", "jupyter"):
        (shim / name).write_text(f'#!/bin/sh\nexec "{VENV_BIN / name}" "$@"\n')
        (shim / name).chmod(0o755)
    # the students' repository the publish commands push to: a bare one here, in place of the URL placeholder
    bare = student.parent / "students.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=60)
    return {"course": ROOT, "student": student, "tmp": student.parent}


def _run(cmd: str, where: Path, tmp: Path, student: Path) -> subprocess.CompletedProcess:
    if re.match(r"^make\b", cmd):
        cmd = "make -n" + cmd[len("make") :]  # the recipe, printed, not run
    cmd = cmd.replace("../course-student", str(tmp / "course-student"))
    cmd = cmd.replace(REMOTE_PLACEHOLDER, str(tmp / "students.git"))
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    env.update(GIT_AUTHOR_NAME="docs test", GIT_AUTHOR_EMAIL="docs@test", GIT_COMMITTER_NAME="docs test")
    env.update(GIT_COMMITTER_EMAIL="docs@test")
    if where == student:
        env["PYTHONPATH"] = f"{student}{os.pathsep}{student / 'work' / 'homework'}"
    return subprocess.run(
        ["bash", "-c", cmd], cwd=where, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("doc", sorted(READMES))
def test_every_readme_command_runs_or_is_skipped_with_a_reason(doc: str, places: dict[str, Path]) -> None:
    cmds = list(dict.fromkeys(commands(READMES[doc])))  # a command shown twice runs once
    assert len(cmds) >= 5, f"{READMES[doc]}: only {cmds} found: the code-block parser is broken"
    ran, skipped, failed = [], [], []
    for cmd in cmds:
        why = _skip_reason(cmd)
        if why is not None:
            try:
                _parse(cmd)
            except (SystemExit, AssertionError, ImportError, AttributeError, ValueError) as exc:
                failed.append(f"{cmd}\n  arguments rejected: {type(exc).__name__}: {exc}")
            skipped.append((cmd, why))
            continue
        cheap = re.search(
            r"--help\b|^make\b|-m autograder student-repo|git (init|add|commit)|git -C \S+ (remote add|push)",
            cmd,
        )
        if not cheap:
            failed.append(f"{cmd}\n  not classified: make it cheap to run here or add it to SKIPPED with why")
            continue
        r = _RAN[doc, cmd] = _run(cmd, places[doc], places["tmp"], places["student"])
        ran.append(cmd)
        if r.returncode != 0:
            failed.append(f"{cmd}\n  exited {r.returncode}: {(r.stderr or r.stdout)[-1500:]}")
    assert not failed, f"{READMES[doc].relative_to(ROOT)}:\n" + "\n".join(failed)
    assert ran, f"no command of {READMES[doc]} ran (skipped: {skipped})"


def test_trainer_help_shows_the_launch_examples(places: dict[str, Path]) -> None:
    """From the student repository's root the entry point is the student's own package, and its --help
    carries the torchrun, multi-node and SLURM examples."""
    cmd = ".venv/bin/python -m homework.train --help"
    r = _RAN.get(("student", cmd)) or _run(cmd, places["student"], places["tmp"], places["student"])
    assert r.returncode == 0, r.stderr[-2000:]
    for want in ("usage: python -m homework.train", "torchrun --standalone", "--nnodes 2", "#SBATCH", "srun"):
        assert want in r.stdout, f"homework.train --help lacks {want!r}:\n{r.stdout[-3000:]}"
    where = _run(
        ".venv/bin/python -c 'import homework; print(homework.__file__)'",
        places["student"],
        places["tmp"],
        places["student"],
    ).stdout.strip()
    want = str(places["student"] / "work" / "homework" / "homework" / "__init__.py")
    assert where == want, f"python -m homework.train from the student root imports {where}, expected {want}"


def test_the_publish_commands_make_a_repository(places: dict[str, Path]) -> None:
    """The instructor README's publish steps left a git repository with one commit and no instructor file."""
    repo = places["tmp"] / "course-student"
    if not (repo / ".git").is_dir():
        pytest.skip("the course README test did not run first (run the whole file)")
    files = subprocess.run(
        ["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "Makefile" in files and "labs/lab02/lab02.ipynb" in files, files[:20]
    bad = [f for f in files if f.split("/")[0] in ("solutions", "autograder", "build", "tests")]
    assert not bad, f"instructor files committed to the student repository: {bad}"
    # the printed push reached the students' repository (a bare one standing in for the URL)
    pushed = subprocess.run(
        ["git", "--git-dir", str(places["tmp"] / "students.git"), "ls-tree", "-r", "--name-only", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(pushed) == sorted(files), "the students' repository lacks what was committed"


def test_module_table_counts_every_stretch() -> None:
    """The README's module table names each lab's stretch exercises as the rubric marks them (issue 35), and
    no README says the fault demo resumes (it has no checkpoint: torchrun reruns it from step 0)."""
    from autograder.config import CourseConfig
    from autograder.rubrics import load_rubric

    cfg = CourseConfig()
    rows = {
        m.group(1): line
        for line in READMES["course"].read_text().splitlines()
        if (m := re.match(r"\| `(lab\d\d)` ", line))
    }
    wrong = []
    for lab in (lab for lab in cfg.lab_ids() if lab.startswith("lab")):
        n = sum(ex.stretch for ex in load_rubric(cfg.rubric / f"{lab}.yaml").exercises)
        row = rows.get(lab, "")
        said = re.search(r"\+ (\d) stretches", row)
        count = int(said.group(1)) if said else (1 if "stretch" in row else 0)
        if count != n:
            wrong.append(f"{lab}: rubric {n} stretch(es), README row says {count}: {row}")
    assert not wrong, "\n".join(wrong)
    for doc in READMES.values():
        assert "the job resumes" not in doc.read_text(), f"{doc}: the fault demo reruns from step 0"
