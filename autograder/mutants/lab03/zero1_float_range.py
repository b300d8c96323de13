# mutant: zero1_float_range
# exercise: zero1
# replaces: zero1_solution
# why: the ceiling taken with torch (.item() is a float): the right numbers as floats, not ints (types)
@@
-    chunk = math.ceil(numel / world)
+    chunk = torch.tensor(numel / world).ceil().item()
