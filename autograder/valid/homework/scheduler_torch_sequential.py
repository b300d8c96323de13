# valid: scheduler_torch_sequential
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: the schedule built from torch's own schedulers - LinearLR from lr/W to lr over the warm-up, then
#      CosineAnnealingLR to eta_min = 10 % of lr over total_steps - W, chained by SequentialLR at W (the cosine
#      alone when W = 0) - is the stated formula up to float rounding (CosineAnnealingLR's recursive form), so it
#      must keep every point. Hunk of the reference module: make_scheduler's body.
@@
-    warm = max(0, cfg.warmup_steps)
-
-    def factor(step: int) -> float:
-        if step < warm:
-            return (step + 1) / warm
-        progress = min(1.0, (step - warm) / max(1, total_steps - warm))
-        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))
-
-    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
+    sched = torch.optim.lr_scheduler
+    warm = max(0, cfg.warmup_steps)
+    cosine = sched.CosineAnnealingLR(optimizer, T_max=max(1, total_steps - warm), eta_min=0.1 * cfg.lr)
+    if warm == 0:
+        return cosine
+    linear = sched.LinearLR(optimizer, start_factor=1 / warm, end_factor=1.0, total_iters=max(1, warm - 1))
+    return sched.SequentialLR(optimizer, [linear, cosine], milestones=[warm])
