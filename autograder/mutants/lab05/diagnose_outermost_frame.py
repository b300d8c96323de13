# mutant: diagnose_outermost_frame
# exercise: diagnose
# replaces: diagnose_solution
# why: the outermost user frame of the stack (the case function's line that called the helper), not the
#   innermost (ddp_uneven: the backward inside the train-step helper)
@@
-    frame = lab05.user_frames(err.stacks[rank])[0]
+    frame = lab05.user_frames(err.stacks[rank])[-1]
