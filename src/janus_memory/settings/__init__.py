"""The settings of a run: ``RunConfig`` (config.py; its ``janus`` section in janus_settings.py, the updater's own
settings checked in updater_settings.py, the settings of runs stored by older versions in migrate.py), the chat backend
section (llm_settings.py), the named presets (presets.py) and the strict YAML loader for config files (yaml_load.py).
Settings are data: nothing here runs a model or touches a run folder. May import the foundation modules (errors,
values, did_you_mean, paths, registry), controller, updaters and inject; never store, run, report, sweep or cli.
"""
