"""The Janus controller (pure: no I/O, no LLM client). Source: paper-spec.md §2-4, §8.3-8.6, §11.

Owns the per-step decision: the trigger (MMT and the other policies), the evaluation set (a strategy registered by
name: the paper's coverage + boundary + fresh set, the stable panel, or a plugin's), the comparison rules and the
controller's state. It asks an evaluator callback to score memories and never calls a
model itself. May import the foundation modules only (values, errors, did_you_mean, rows); nothing of the plugin packages,
the run, the store or the CLI.

Public API::

    from janus_memory.controller import Janus, JanusConfig, StepInput, Decision
    from janus_memory.controller import EvalSetStrategy, EvalPlan, register_eval_set  # a new evaluation set
"""
from .adapter import GuardedUpdate, RollbackError, guarded_step
from .config_groups import DecisionConfig, EvalSetConfig, ReuseConfig, TriggerConfig
from .decision_rules import Comparison, EvaluationError, compare, sign_test
from .janus import Decision, Janus, JanusConfig, StepInput, task_id_of
from .strategy import EVAL_SETS, EvalPlan, EvalSetStrategy, eval_set_for, register_eval_set
from .trigger import TRIGGER_POLICIES, TriggerPolicy, cosine, momentum_update

__all__ = [
    "EVAL_SETS",
    "TRIGGER_POLICIES",
    "Comparison",
    "Decision",
    "DecisionConfig",
    "EvalPlan",
    "EvalSetConfig",
    "EvalSetStrategy",
    "EvaluationError",
    "GuardedUpdate",
    "RollbackError",
    "Janus",
    "JanusConfig",
    "ReuseConfig",
    "StepInput",
    "TriggerConfig",
    "TriggerPolicy",
    "compare",
    "cosine",
    "eval_set_for",
    "guarded_step",
    "momentum_update",
    "register_eval_set",
    "sign_test",
    "task_id_of",
]
