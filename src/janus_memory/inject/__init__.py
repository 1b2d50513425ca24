"""Injected harmful candidates: the kinds and how a candidate is made (candidates.py, templates in
templates.yaml), the plan of which step gets which kind (plan.py) and the candidates built as states (state.py: a
playbook, a bank, experience records). An updater writes one into its own state through its hook
(``Updater.inject_harm``), so nothing here names an updater. May import the foundation modules and updaters; never
settings, store, run, report, sweep or cli (the stream loop's side is run/injection.py).
"""
