# mutant: elastic_restart_epoch
# exercise: elastic
# replaces: elastic_solution
# why: ignores the saved position: the resumed epoch starts again from its first sample
def elastic_batches(n: int, world_size: int, rank: int, *, seed: int, epoch: int, consumed: int,
                    batch_size: int) -> list[list[int]]:
    """This rank's remaining batches of ``epoch`` after ``consumed`` samples (all ranks together) were
    trained on."""
    ### BEGIN SOLUTION
    rest = lab04.epoch_order(n, seed, epoch)
    # global batches are fixed by the stream alone (not the world size); ranks deal each one out interleaved
    return [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
    ### END SOLUTION
