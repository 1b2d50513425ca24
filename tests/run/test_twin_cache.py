"""Independence of the base method and its +Janus twin: with ``twin_cache: separate`` (the paper
preset) the twin's requests carry their own sample indices, so none of its answers comes from the base method's
identical requests; ``shared`` (small preset) lets them share cached answers."""
from __future__ import annotations

import json

from janus_memory.cli import main
from janus_memory.run.build import NamespacedClient, twin_sample
from janus_memory.settings.config import RunConfig


class Recorder:
    def __init__(self):
        self.sent = []
        self.usage = "meter"

    def chat(self, messages, *, sample=0, **params):
        self.sent.append(("chat", sample))
        return "r"

    def chat_many(self, batch, *, sample=0, **params):
        self.sent.append(("many", sample))
        return ["r"] * len(batch)


def test_namespaced_client_moves_every_sample_index():
    rec = Recorder()
    c = NamespacedClient(rec, "janus")
    c.chat([{"role": "user", "content": "x"}])
    c.chat_many([[], []], sample=[0, 5])
    c.chat_many([[]], sample=7)
    z, five, seven = twin_sample("janus", 0), twin_sample("janus", 5), twin_sample("janus", 7)
    assert rec.sent == [("chat", z), ("many", [z, five]), ("many", seven)]
    assert len({z, five, seven}) == 3 and min(z, five, seven) >= 1 and z != twin_sample("other", 0)
    assert c.usage == "meter"  # everything else is the run's client


def _usage(out, method):
    return json.loads((out / "summary.json").read_text())["methods"][method]["usage"]


def test_twin_answers_are_independent_in_the_paper_preset(tmp_path, monkeypatch):
    common = ["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "8", "--test-size", "4",
              "--warmup", "4", "--coverage-size", "2", "--boundary-size", "1", "--fresh-size", "1",
              "--dataset", "gsm8k", "--updater", "dc_rs", "--controller", "both"]
    for mode in ("separate", "shared"):
        monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / f"cache-{mode}"))
        args = [*common, "--out", str(tmp_path / mode)] + (["--twin-cache", "shared"] if mode == "shared" else [])
        assert main(args) == 0
    sep, shared = _usage(tmp_path / "separate", "dc_rs+janus"), _usage(tmp_path / "shared", "dc_rs+janus")
    # separate (the paper preset's default): the twin paid for all 8 solver and 8 curator calls itself
    assert (sep["solver"]["calls"], sep["solver"]["cache_hits"], sep["curator"]["cache_hits"]) == (8, 0, 0)
    # shared: 7 of the twin's 8 stream requests are identical to the base's and are served by the cache
    assert (shared["solver"]["calls"], shared["solver"]["cache_hits"]) == (1, 7)
    assert RunConfig().twin_cache_mode() == "separate" and RunConfig(preset="small").twin_cache_mode() == "shared"


def test_a_config_stored_before_the_twin_cache_setting_resumes_as_it_ran():
    from janus_memory.settings.config import migrate_stored

    old = {"preset": "paper", "dataset": "gsm8k", "janus": {"clustering": "full"}, "updater_config": {}}
    got = RunConfig.parse(migrate_stored(old))
    assert (got.checker_mode(), got.replay_failure_mode(), got.twin_cache_mode()) == ("strict", "abort", "shared")
    assert got.janus_config().clustering == "sklearn" and got.updater_settings()["sampling"] == "backend"
    new = RunConfig().model_dump()  # written since the setting existed: the key is there (None = the preset's), nothing pinned
    assert "twin_cache" in new and migrate_stored(new) == new
