# mutant: contract_wait_timeout
# exercise: contract
# replaces: contract_solution
# why: a checker that never hangs: it waits for its all_gather with a 2 s timeout. It names the right ranks,
#      but bug 3 then ends in rank 1's "Operation timed out" inside the checker, not rank 0 stuck in backward
#      (nor gloo's mismatch): the diagnosis points at the checker instead of the unused parameter
@@
-    dist.all_gather(everyone, mine)
+    from datetime import timedelta
+    dist.all_gather(everyone, mine, async_op=True).wait(timeout=timedelta(seconds=2))
