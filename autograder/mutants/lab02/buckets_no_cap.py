# mutant: buckets_no_cap
# exercise: bucketed
# replaces: buckets_solution
# why: only the first bucket is capped: everything else in one
def assign_buckets(sizes: list[int], cap_bytes: int, first_cap_bytes: int) -> list[list[int]]:
    """Group parameters (``sizes[i]`` bytes, registration order) into buckets, listed in launch order.

    Walk the parameters in reverse; add each to the current bucket; close it as soon as it holds >= its limit
    (``first_cap_bytes`` for the first bucket, ``cap_bytes`` after). Indices inside a bucket in walking
    order."""
    ### BEGIN SOLUTION
    buckets, current, filled, limit = [], [], 0, first_cap_bytes
    for i in reversed(range(len(sizes))):  # reverse: gradients of the last layers are ready first
        current.append(i)
        filled += sizes[i]
        if filled >= limit:
            buckets.append(current)
            current, filled, limit = [], 0, float('inf')
    if current:
        buckets.append(current)
    return buckets
    ### END SOLUTION
