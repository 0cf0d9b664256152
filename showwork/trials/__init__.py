"""Running trials: one trial in a process (:mod:`~showwork.trials.execution`), the Ray worker's side of it
(:mod:`~showwork.trials.worker`), starting Ray (:mod:`~showwork.trials.ray_setup`) and many trials on Ray Tune
(:mod:`~showwork.trials.ray_executor`).

Nothing is imported here: every Ray worker imports :mod:`showwork.trials.worker`, and with it this package.
"""
