"""Sampling: the paper preset sends top_p 1, top_k -1 (unrestricted) and min_p 0 with every call,
as the authors' vLLM calls leave them unrestricted (llama.cpp's defaults are 0.95 / 40 / 0.05); ``sampling:
backend`` (the small preset) sends none of them."""
from __future__ import annotations

import pytest

from janus_memory.errors import ConfigError
from janus_memory.llm.base import ChatRequest
from janus_memory.settings.config import RunConfig, check_updater_config
from janus_memory.tasks import get_family
from janus_memory.updaters import make_updater
from janus_memory.updaters.dc import DCRetrievalSynthesis as DCRS


def _upd(name, **cfg):
    return make_updater(name, llm=None, family=get_family("gsm8k"), encoder=None, config=cfg)


def test_paper_sampling_on_every_call_kind():
    for params in (_upd("dc_rs").solver_params(), _upd("dc_rs").curator_params(), _upd("expel").solver_params(),
                   _upd("exprag").solver_params(), _upd("ace").curator_params()):
        assert params["top_p"] == 1.0 and params["extra_body"] == {"top_k": -1, "min_p": 0.0}
    body = ChatRequest(messages=[{"role": "user", "content": "x"}], **_upd("dc_rs").solver_params()).body()
    assert (body["top_p"], body["top_k"], body["min_p"], body["presence_penalty"]) == (1.0, -1, 0.0, 1.0)


def test_backend_sampling_sends_none_and_user_settings_win():
    p = _upd("dc_rs", sampling="backend").solver_params()
    assert "top_p" not in p and "extra_body" not in p
    q = _upd("dc_rs", extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
             solver_params={"top_p": 0.8}).solver_params()
    assert q["top_p"] == 0.8
    assert q["extra_body"] == {"top_k": 20, "min_p": 0.0, "chat_template_kwargs": {"enable_thinking": False}}
    assert "top_p" not in _upd("dc_rs", sampling="backend", extra_body={"a": 1}).solver_params()


def test_presets_and_validation():
    assert "sampling" not in RunConfig(updater="dc_rs").updater_settings()  # paper: the updater default ("paper")
    for upd in ("dc_rs", "dc_cu", "expel", "exprag", "ace"):
        assert RunConfig(preset="small", updater=upd).updater_settings()["sampling"] == "backend"
    with pytest.raises(ConfigError, match="updater_config.sampling"):
        check_updater_config(DCRS, {"sampling": "greedy"})
    with pytest.raises(ValueError, match="sampling must be one of paper, backend"):
        _upd("dc_rs", sampling="greedy").solver_params()
