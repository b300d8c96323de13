# mutant: ckpt_no_model_check
# exercise: ckpt
# replaces: ckpt_solution
# why: loads without comparing checkpoint and model: a different model fails inside DCP, not as ValueError
@@
-from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict, set_state_dict  # noqa: E402
+from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict, set_state_dict  # noqa: E402, F401
@@
-    saved = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
-    in_ckpt = {k[len("model."):]: tuple(m.size) for k, m in saved.items() if k.startswith("model.")}
-    mine = {k: tuple(t.shape) for k, t in get_model_state_dict(model).items()}
-    for key in sorted(set(in_ckpt) | set(mine)):
-        if in_ckpt.get(key) != mine.get(key):
-            raise ValueError(f"checkpoint {path} is of a different model: {key} has shape {in_ckpt.get(key)} "
-                             f"there and {mine.get(key)} here")
