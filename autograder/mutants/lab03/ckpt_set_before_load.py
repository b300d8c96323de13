# mutant: ckpt_set_before_load
# exercise: ckpt
# replaces: ckpt_solution
# why: hands the state dict to the model and optimizer first and loads into it afterwards: dcp.load fills
#      the tensors in place (they are right), the learning rate set before the load is the fresh one
#      (written from the release text alone)
@@
-    dcp.load(state, checkpoint_id=path)  # in place, into this world size's shards
-    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
+    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
+    dcp.load(state, checkpoint_id=path)  # in place, into this world size's shards
