"""A run's life: build the context from the settings (build.py, the chat backends in backends.py and the scripted fake
model in fake_llm.py), run the stream loop (loop.py, the evaluator in evaluator.py and eval_batch.py, injected
candidates in injection.py), record usage, provenance and timing (usage.py, provenance.py, timing.py, estimate.py), and
resume an interrupted run (resume.py); experiment.py's ``run_experiment`` ties them together. May import the
foundation modules, controller, llm, encoders, tasks, updaters, plugins.py, inject, settings and store; never
report, sweep or cli.
"""
