# mutant: uneven_join_no_joinable
# exercise: uneven
# replaces: uneven_solution
# why: Join without the model as a joinable (an empty list): Join refuses it, so "join" never runs
@@
-        with Join([ddp]):  # DDP is the joinable: it knows which all-reduces to shadow
+        with Join([]):
