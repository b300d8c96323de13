# mutant: bucketed_keeps_old_hooks
# exercise: bucketed
# replaces: bucketed_solution
# why: never removes the hooks of an earlier wrapper of the same module (the old reference, issue 11): a
#   re-wrapped module reduces its gradients twice in the first step. The old tests passed it.
@@
-        for handle in getattr(module, "_bucketed_ddp_hooks", []):
-            handle.remove()  # wrapped before: the old wrapper's hooks would reduce every gradient a second time
