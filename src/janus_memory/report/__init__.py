"""What `janus report` makes of finished run folders: the loaded runs (runs.py) and their variants (variants.py), the
tables (tables.py, summary_table.py, published.py, setup.py), paired statistics (paired.py), plots (plots.py), memory
diffs (memdiff.py), injected-candidate summaries (inject_report.py), the console summary (console.py) and report.py,
which writes them all. Only reads run folders (through store.reader). May import the foundation modules, the plugin
packages, inject, settings, store and run; never sweep or cli.
"""
