# mutant: frame_no_window
# exercise: frame
# replaces: frame_solution
# why: accepts an empty availability window (available_until before available_from)
<<<<<<< find
    if not when["available_from"] < when["available_until"]:
        raise ValueError(f"data.available_until {data['available_until']!r} must be after "
                         f"data.available_from {data['available_from']!r}")
=======
>>>>>>> replace
