"""Servers and drivers that the test suite and the benchmarks share, so neither imports the other: an
OpenAI-compatible stub server with scripted replies and faults (``openai_stub``), a llama.cpp HTTP server on
127.0.0.1 (``llamacpp_server``), and headless Chromium over the DevTools pipe (``headless``).

Owns nothing a run uses: no module of janus_memory imports this package. It may import only the standard library
(``llamacpp_server`` starts ``xllamacpp`` in a child process).
"""
