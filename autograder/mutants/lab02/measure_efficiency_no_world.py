# mutant: measure_efficiency_no_world
# exercise: measure
# replaces: measure_solution
# why: efficiency as speed-up over world 1, not divided by the world size
@@
-    the columns samples_per_s, efficiency and core_s_per_1k added (definitions above)."""
+    the
+    columns samples_per_s, efficiency and core_s_per_1k added (definitions above)."""
@@
-    out["efficiency"] = out["samples_per_s"] / (out["world"] * out["impl"].map(base))
+    out["efficiency"] = out["samples_per_s"] / out["impl"].map(base)
@@
-    excluded). ``optimizer``: "sgd", "sgd_momentum" or "adam"; anything else raises ValueError naming it."""
+    excluded).
+    ``optimizer``: "sgd", "sgd_momentum" or "adam"; anything else raises ValueError naming it."""
