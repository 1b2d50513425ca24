"""Injected harmful candidates (issue 15): the kinds and how a candidate is made (candidates.py, templates in
templates.yaml), the plan of which step gets which kind (plan.py) and the updater-state rewrite that deploys one
(state.py). May import the foundation modules and updaters; never settings, store, run, report, sweep or cli (the
stream loop's side is run/injection.py).
"""
