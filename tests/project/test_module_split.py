"""The module split: every name keeps its old import path (the same object as in its new module), and the state
formats the split modules write are unchanged."""
import json

import numpy as np
import pytest

import janus_memory
from janus_memory.values import Task

OLD_TO_NEW = [
    ("janus_memory.controller.janus", "janus_memory.controller.config", ["JanusConfig"]),
    ("janus_memory.controller.janus", "janus_memory.controller.step", ["StepInput", "Decision", "task_id_of"]),
    ("janus_memory.controller.janus", "janus_memory.controller.state", ["STATE_FORMAT"]),
    ("janus_memory.updaters.base", "janus_memory.updaters.records",
     ["ChatLLM", "Family", "Encoder", "LLMCall", "StepOutcome"]),
    ("janus_memory.updaters.base", "janus_memory.updaters.prompt_text", ["load_prompt", "fill", "truncate", "visible_text"]),
    ("janus_memory.updaters.base", "janus_memory.updaters.bank", ["RetrievalBank"]),
    ("janus_memory.tasks.sandbox", "janus_memory.tasks.sandbox_job",
     ["SandboxLimits", "SandboxResult", "SandboxStatus", "set_parent_death_signal"]),
    ("janus_memory.updaters.expel_rules", "janus_memory.updaters.expel_rulelist", ["RuleOp", "norm_rule", "render_rules",
                                                                                  "OPS"]),
    ("janus_memory.updaters.expel_rules", "janus_memory.updaters.expel_rules_paper",
     ["apply_ops_paper", "parse_ops_paper", "normalize_rule_paper", "paper_rule_index"]),
]


@pytest.mark.parametrize("old,new,names", OLD_TO_NEW)
def test_old_import_paths_are_the_new_objects(old, new, names):
    import importlib

    o, n = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(o, name) is getattr(n, name), name


def test_package_level_names_and_mixins():
    from janus_memory.controller import janus as jmod
    from janus_memory.llm.client import LLMClient, issue_order  # noqa: F401
    from janus_memory.updaters.base import COMMON_DEFAULTS, EMPTY_MEMORY, SNAPSHOT_FORMAT, UPDATERS  # noqa: F401

    assert janus_memory.JanusConfig is jmod.JanusConfig and janus_memory.Janus is jmod.Janus
    assert janus_memory.Updater.__module__ == "janus_memory.updaters.base"
    assert jmod.Janus.__bases__ == (object,) and "_fetch" in vars(LLMClient)  # one class, one file each
    assert (EMPTY_MEMORY, SNAPSHOT_FORMAT, sorted(UPDATERS)[:2]) == ("(empty)", 1, ["ace", "dc_cu"])


def test_controller_state_keys_and_format_unchanged():
    j = janus_memory.Janus(janus_memory.JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=1,
                                                    trigger="always"), lambda m, ts: [True] * len(ts))
    for i in range(4):
        t = Task(id=f"t{i}", dataset="toy", question=f"q{i}", gold="1")
        j.decide(janus_memory.StepInput(t, np.ones(4) * (i + 1), "a", f"a{i}", np.ones(3), np.ones(3) * i))
    st = json.loads(json.dumps(j.state_dict()))
    assert st["format"] == "janus-controller/1"
    assert list(st) == ["format", "config", "step", "trigger_count", "seen_end", "warmup_initialized", "momentum",
                        "coverage", "boundary", "coverage_model", "embeddings", "ids", "tasks", "stats",
                        "trigger_state"]
    assert list(st["stats"]) == ["steps", "triggers", "accepts", "rollbacks", "evaluator_calls",
                                 "evaluator_calls_saved", "evaluation_failures"]
    assert (st["stats"]["steps"], st["stats"]["triggers"], st["stats"]["accepts"]) == (4, 2, 4)
    assert st["tasks"][0] == {"type": "Task", "data": {"id": "t0", "dataset": "toy", "question": "q0", "gold": "1",
                                                        "meta": {}}}
    back = janus_memory.Janus.from_state_dict(st, lambda m, ts: [True] * len(ts))
    assert json.dumps(back.state_dict(), sort_keys=True) == json.dumps(st, sort_keys=True)


def test_expel_is_one_class():
    """ExpeL's success-case retrieval is part of the class (one concept: its rules and the cases it learns them
    from), and its helpers stay importable from ``updaters/expel.py``."""
    from janus_memory.updaters.expel import ExpeL, _first_block, _last_block, paper_case_fields  # noqa: F401

    assert ExpeL.__mro__[1].__name__ == "Updater"
    for name in ("_add_case", "_retrieve", "_examples_block", "state_hints"):
        assert name in vars(ExpeL), name
