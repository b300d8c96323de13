"""Logging for course_dist: one logger, ``logging.getLogger("course_dist")``, with the rank in every line.

Library code never calls ``print``: the launcher logs as ``[launcher]``, a rank as ``[rank N]``. A rank's log
lines go to its stderr, which the launcher streams into the notebook cell (prefixed ``[rank N]`` once more by
the stream, so the logger's own prefix is kept short).
"""

from __future__ import annotations

import logging
import sys

LOGGER_NAME = "course_dist"
_where = "launcher"


class _RankFilter(logging.Filter):
    """Stamp every record with ``record.where`` ("launcher" or "rank N") so formats can show it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.where = _where
        return True


def get_logger(name: str = LOGGER_NAME) -> logging.Logger:
    """The package logger (child loggers such as ``course_dist.launch`` propagate to it)."""
    logger = logging.getLogger(name)
    return logger


def set_where(where: str) -> None:
    """Name this process in log lines (called once by a rank: ``set_where("rank 1")``)."""
    global _where
    _where = where


def install_rank_handler(level: int = logging.INFO) -> None:
    """In a rank: log ``course_dist`` records to this process's stderr (the per-rank stderr file)."""
    logger = logging.getLogger(LOGGER_NAME)
    for h in list(logger.handlers):
        logger.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_RankFilter())
    handler.setFormatter(logging.Formatter("course_dist %(where)s %(levelname)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
