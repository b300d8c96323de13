# mutant: restart_epoch
# exercise: elastic
# replaces: fttrainer/sampler.py (package module: body appended; re-binds ElasticSampler.load_state_dict)
# why: resumes the right epoch but from its beginning (what a plain DistributedSampler does after a restart):
#      samples trained before the checkpoint are trained again


def _load_state_dict_from_epoch_start(self, state):
    self.epoch = int(state["epoch"])
    self.consumed = 0


ElasticSampler.load_state_dict = _load_state_dict_from_epoch_start
