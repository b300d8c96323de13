# valid: frdump_per_group
# exercise: frdump
# replaces: frdump_solution
# why: walks the groups one at a time (the default group, then the rest by name) and the seq ids of each with
#      a counter over the signatures, the sizes made hashable as tuples, the frame found by a loop, extra
#      prints: the same first divergence, odd rank, op and int line
def fr_culprit(entries: dict[int, list[dict]]) -> dict:
    """``{"rank", "group", "seq", "op", "line"}`` of the first disagreement in the ranks' flight-recorder
    entries (rules above)."""
    from collections import Counter

    groups = sorted({e["group"] for es in entries.values() for e in es}, key=lambda g: (g != "0", g))
    for group in groups:
        table = {r: {e["seq"]: e for e in es if e["group"] == group} for r, es in entries.items()}
        for seq in sorted(set().union(*(t.keys() for t in table.values()))):
            sig = {}
            for r, t in table.items():
                e = t.get(seq)
                sig[r] = None if e is None else (e["op"], tuple(tuple(s) for s in e["sizes"]))
            counts = Counter(sig.values())
            if len(counts) == 1:
                continue
            odd = [r for r, s in sig.items() if counts[s] == 1][0]
            print(f"group {group} seq {seq}: {sig}")
            entry = table[odd].get(seq)
            if entry is None:  # the odd rank never reached this collective
                return {"rank": odd, "group": group, "seq": seq, "op": None, "line": None}
            line = None
            for frame in entry["frames"]:
                if frame["file"].endswith("hangs.py"):
                    line = int(frame["line"])
                    break
            return {"rank": odd, "group": group, "seq": seq, "op": entry["op"], "line": line}
    raise ValueError("no divergence in the dumps")
