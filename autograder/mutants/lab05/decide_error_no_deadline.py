# mutant: decide_error_no_deadline
# exercise: decide
# replaces: decide_solution
# why: the ValueError names the fastest time but not the deadline it missed
@@
-        raise ValueError(f"no configuration reaches the target within {deadline_s} s: the fastest takes "
+        raise ValueError("no configuration reaches the target in time: the fastest takes "
