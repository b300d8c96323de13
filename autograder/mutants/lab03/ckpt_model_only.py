# mutant: ckpt_model_only
# exercise: ckpt
# replaces: ckpt_solution
# why: saves and loads the model but not the optimizer: the resumed step uses fresh AdamW moments
@@
-    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=path)
+    dcp.save({"model": model_sd}, checkpoint_id=path)
@@
-    state = {"model": model_sd, "optim": optim_sd}
+    state = {"model": model_sd}
     dcp.load(state, checkpoint_id=path)  # in place, into this world size's shards
-    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
+    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=optim_sd)
