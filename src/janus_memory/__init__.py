"""janus-memory: plug-in controller for selective updates in evolving LLM memory."""
__version__ = "0.1.0"
