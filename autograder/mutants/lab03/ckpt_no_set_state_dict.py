# mutant: ckpt_no_set_state_dict
# exercise: ckpt
# replaces: ckpt_solution
# why: stops at dcp.load, which fills the model's and optimizer's tensors in place, and never calls
#      set_state_dict (issue 34 class 4): every value that is not a tensor is lost, here the learning rate a
#      scheduler changed, so the resumed step takes the initial learning rate
@@
-    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
