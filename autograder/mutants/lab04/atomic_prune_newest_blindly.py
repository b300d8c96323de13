# mutant: atomic_prune_newest_blindly
# exercise: atomic
# replaces: atomic_solution
# why: prunes sorted(step-*)[:-keep]: past a broken newer dir, deletes the one just written (issue 11)
@@
-    older = [d for d in sorted(root.glob("step-*")) if d.is_dir() and d.name < final.name]
-    complete = [d for d in older if verify_checkpoint(d, deep=False) is None]
-    for d in complete[: max(0, len(complete) - (keep - 1))]:
+    for d in sorted(d for d in root.glob("step-*") if d.is_dir())[:-keep]:
