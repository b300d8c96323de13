# mutant: elastic_per_rank_stream
# exercise: elastic
# replaces: elastic_solution
# why: deals the whole remaining epoch per rank, not each global batch: batches change with world
def elastic_batches(n: int, world_size: int, rank: int, *, seed: int, epoch: int, consumed: int,
                    batch_size: int) -> list[list[int]]:
    """This rank's remaining batches of ``epoch`` after ``consumed`` samples (all ranks together) were
    trained on."""
    ### BEGIN SOLUTION
    rest = lab04.epoch_order(n, seed, epoch)[consumed:]
    # global batches are fixed by the stream alone (not the world size); ranks deal each one out interleaved
    mine = rest[rank::world_size]
    per = math.ceil(batch_size / world_size)
    steps = math.ceil(len(rest) / batch_size)
    return [mine[j * per : (j + 1) * per] for j in range(steps)]
    ### END SOLUTION
