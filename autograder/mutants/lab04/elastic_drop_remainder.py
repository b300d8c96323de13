# mutant: elastic_drop_remainder
# exercise: elastic
# replaces: elastic_solution
# why: trims each global batch to a multiple of the world size (drop_last): samples lost
def elastic_batches(n: int, world_size: int, rank: int, *, seed: int, epoch: int, consumed: int,
                    batch_size: int) -> list[list[int]]:
    """This rank's remaining batches of ``epoch`` after ``consumed`` samples (all ranks together) were
    trained on."""
    ### BEGIN SOLUTION
    rest = lab04.epoch_order(n, seed, epoch)[consumed:]
    # global batches are fixed by the stream alone (not the world size); ranks deal each one out interleaved
    batches = [rest[i : i + batch_size] for i in range(0, len(rest), batch_size)]
    return [b[: len(b) // world_size * world_size][rank::world_size] for b in batches]
    ### END SOLUTION
