# mutant: dcp_final_made_early
# exercise: dcp
# replaces: dcp_solution
# why: makes the destination first (a rename onto an empty dir works): a save that dies leaves a step dir
@@
+    final.mkdir(exist_ok=True)
     future.result()  # this rank's files are written; rank 0's future also covers .metadata (written last)
