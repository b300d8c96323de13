# mutant: diagnose_blame_waiting
# exercise: diagnose
# replaces: diagnose_solution
# why: blames the first rank still waiting inside a collective (last_collective not done): a healthy survivor
#   stuck behind the culprit, not the rank that diverged
def diagnose(err: LaunchTimeout) -> dict:
    """``{"rank": culprit, "seq": collective number, "op": culprit's op there or None, "line": int}`` for a
    ``LaunchTimeout`` of a ``trace=True`` launch (rules above)."""
    ### BEGIN SOLUTION
    div = first_divergence(err.trace)
    waiting = [r for r, c in sorted(err.last_collective.items()) if c is not None and not c.get("done")]
    rank = waiting[0] if waiting else div.ranks[0]
    call = div.calls.get(rank)
    if call is not None:
        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
    frame = lab05.user_frames(err.stacks[rank])[0]
    return {"rank": rank, "seq": div.seq, "op": None, "line": frame.line}
    ### END SOLUTION
