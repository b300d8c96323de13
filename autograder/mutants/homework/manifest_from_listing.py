# mutant: manifest_from_listing
# exercise: atomic
# replaces: fttrainer/checkpoint.py (package module: body appended; re-binds _required)
# why: a checkpoint counts as complete when shared.pt and whatever its manifest lists verify: a rank whose
#      file never arrived is not missed, and the torn world-2 checkpoint is published, chosen and resumed


def _required(world_size):
    return {"shared.pt"}
