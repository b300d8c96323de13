# mutant: card_capacity_is_model_size
# exercise: decide
# replaces: card_solution
# why: quotes the lab model's size as the capacity instead of the largest model that fits
@@
-    capacity=Limit(float(capacity), "parameters", "fp32 AdamW + one batch of activations in 8 GiB per rank"),
+    capacity=Limit(float(n_lab), "parameters", "fp32 AdamW + one batch of activations in 8 GiB per rank"),
