"""A pandas DataFrame as a GitHub markdown table (pandas' own ``to_markdown`` needs tabulate, not pinned)."""

from __future__ import annotations

from typing import Any


def md_table(df: Any, index: bool = True) -> str:
    """``df`` as a markdown table: floats to 3 significant digits, the index first if ``index``."""
    frame = df.reset_index() if index else df

    def cell(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v).replace("|", "\\|")

    head = [str(c) for c in frame.columns]
    rows = [[cell(v) for v in row] for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
