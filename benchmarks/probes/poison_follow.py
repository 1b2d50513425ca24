"""Does a model follow an instruction planted in its memory? Each poison template solved with a run's cheatsheet as it
is and with the template planted on top. The measurement is janus_memory.report.poison_follow (its docstring has the
options and how to read the output)::

    python benchmarks/probes/poison_follow.py RUN_DIR [--method dc_rs] [--step K] [--split test|stream] [--tasks N]
                                              [--templates 0,2] [--extra benchmarks/probes/poison_extra.txt]
"""
from janus_memory.report.poison_follow import main

if __name__ == "__main__":
    raise SystemExit(main())
