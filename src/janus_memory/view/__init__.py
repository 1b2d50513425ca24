"""`janus view RUN [RUN ...]`: a run folder as one self-contained HTML page (docs/view.md).

data.py reads the run folders (through RunReader and the report's computations) into the page's JSON; page.py renders
the page (Jinja2, vendored uPlot, our script and style, all inline); serve.py serves it on 127.0.0.1 (``--serve``).
May import everything below it (store to read run folders, report for its computations, tasks); never sweep or cli.
"""
