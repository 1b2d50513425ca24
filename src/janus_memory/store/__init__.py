"""The run folder: RunStore writes it (store.py, its file-level housekeeping in folder.py) under a lock (lock.py), with
JSON helpers (jsonio.py), the hash chain (chain.py), stored texts and deltas (text_log.py, delta.py), checkpoint rows
(ckpt_log.py, ckpt_rows.py) and the typed events the stream loop emits and the store writes (events.py); RunReader
reads it back (reader.py), integrity.py checks what COMPLETE promises, finder.py finds finished and unfinished run
folders and unfinished.py says how far an unfinished one got. May import the foundation modules and settings; never
run, report, sweep or cli.
"""
