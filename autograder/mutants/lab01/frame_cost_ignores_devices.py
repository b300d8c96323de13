# mutant: frame_cost_ignores_devices
# exercise: frame
# replaces: frame_solution
# why: prices one device per second however many are rented
@@
-    per_second = devices * price_per_device_hour / 3600  # what the devices cost per second, busy or not
+    per_second = price_per_device_hour / 3600  # what the devices cost per second, busy or not
