"""Right-sizing the solver's token cap from answers a model already wrote: what each lower cap would have given.
The measurement is janus_memory.report.token_caps (its docstring says how it counts)::

    python benchmarks/probes/token_caps.py RUN_DIR [RUN_DIR ...] [--caps 192,256,320,384,448]
"""
from janus_memory.report.token_caps import main

if __name__ == "__main__":
    raise SystemExit(main())
