# mutant: recovery_save_rank0_only
# exercise: recovery
# replaces: recovery_solution
# why: "rank 0 writes" read as "only rank 0 calls simple_save": the other ranks never reach its barrier
#      (now a RuntimeError naming them within 15 s, instead of three 60 s launcher timeouts; issue 33)
@@
-            if tr.step % every == 0:
+            if tr.rank == 0 and tr.step % every == 0:
