# mutant: zero1_fp32_cast
# exercise: zero1
# replaces: zero1_solution
# why: casts every parameter to fp32 to keep one flat buffer: a bf16 model silently becomes fp32 (twice the memory, other numerics)
@@
         self.buckets = []
+        for g in self.param_groups:
+            for p in g["params"]:
+                p.data = p.data.float()  # one dtype, one buffer
