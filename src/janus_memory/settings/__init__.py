"""The settings of a run: ``RunConfig`` (config.py, its checks in checks.py), the chat backend section
(llm_settings.py), the named presets (presets.py) and the strict YAML loader for config files (yaml_load.py). Settings
are data: nothing here runs a model or touches a run folder. May import the foundation modules (errors, types, names,
paths, registry), controller, updaters and inject; never store, run, report, sweep or cli.
"""
