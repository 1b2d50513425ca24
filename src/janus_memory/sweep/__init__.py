"""Many runs at once: a sweep of run configs (sweep.py), the paper's grid of methods and seeds (grid.py) and where the
runs execute, local worker processes or a Ray cluster (executors.py). May import everything below it (settings, store,
run, report and what they build on); never cli.
"""
