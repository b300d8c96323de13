# mutant: ckpt_torch_save
# exercise: ckpt
# replaces: ckpt_solution
# why: every rank torch.saves its shards into a file of its own: one file per rank, but no DCP .metadata
#      (nothing records the global shapes, so no other world size can load it)
@@
-    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=path)
+    os.makedirs(path, exist_ok=True)
+    torch.save({"model": model_sd, "optim": optim_sd}, os.path.join(path, f"rank{dist.get_rank()}.pt"))
