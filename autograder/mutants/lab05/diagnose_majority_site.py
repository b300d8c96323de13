# mutant: diagnose_majority_site
# exercise: diagnose
# replaces: diagnose_solution
# why: names the right rank but reports the line and op where the healthy majority wait, not the culprit's
def diagnose(err: LaunchTimeout) -> dict:
    """``{"rank": culprit, "seq": collective number, "op": culprit's op there or None, "line": int}`` for a
    ``LaunchTimeout`` of a ``trace=True`` launch (rules above)."""
    ### BEGIN SOLUTION
    div = first_divergence(err.trace)
    rank = div.ranks[0]
    call = next(c for r, c in div.calls.items() if r not in div.ranks and c is not None)
    return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
    ### END SOLUTION
