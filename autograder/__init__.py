"""The course pipeline: authoring -> release -> autograding -> feedback -> export.

Commands (``python -m autograder <cmd> --help``)::

    python -m autograder release [--lab L]          # solutions/<lab>/<lab>.py -> labs/<lab>/ (make release)
    python -m autograder grade SUBMISSIONS [--lab L] [--workers N] [--student NAME] [--out CSV]
    python -m autograder course                     # make course: release, run references, grade samples
    python -m autograder mutants [--lab L]          # exercise-level mutant check (nbclient, fast mode)

Modules: config (paths, limits), source (jupytext source, solution/hidden regions), rubrics, nbgrader_ext
(nbgrader config + stub naming), release, worker (one autograde per process), procs (kill a submission's
tree), grade (parallel CLI, CSV, gradebook), mutants, course, plots.
"""
