# mutant: recovery_time_from_launch
# exercise: recovery
# replaces: recovery_solution
# why: recovery time = wall time of the relaunch, not read from progress.log (issue 11)
<<<<<<< find
    for attempt in range(max_restarts + 1):
=======
    relaunch_s = []
    for attempt in range(max_restarts + 1):
        t_launch = time.time()
>>>>>>> replace
<<<<<<< find
            break
=======
            relaunch_s.append(time.time() - t_launch)
            break
>>>>>>> replace
<<<<<<< find
        recovery.append(float(nxt["time"].min() - failed["time"].max()) if len(failed) else float("nan"))
=======
    recovery = relaunch_s[-1:] if attempt else []
>>>>>>> replace
