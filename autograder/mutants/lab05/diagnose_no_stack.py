# mutant: diagnose_no_stack
# exercise: diagnose
# replaces: diagnose_solution
# why: when the culprit never made the call, reports its last traced collective's line instead of reading its
#   stack (the DDP hang: the culprit is stuck in backward, which the trace cannot show)
def diagnose(err: LaunchTimeout) -> dict:
    """``{"rank": culprit, "seq": collective number, "op": culprit's op there or None, "line": int}`` for a
    ``LaunchTimeout`` of a ``trace=True`` launch (rules above)."""
    ### BEGIN SOLUTION
    div = first_divergence(err.trace)
    rank = div.ranks[0]
    call = div.calls.get(rank)
    if call is not None:
        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
    last = err.last_collective.get(rank) or {"site": ":-1"}
    return {"rank": rank, "seq": div.seq, "op": None, "line": int(last["site"].rsplit(":", 1)[1])}
    ### END SOLUTION
