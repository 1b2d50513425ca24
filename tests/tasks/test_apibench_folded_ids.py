"""The APIBench scorer on identifiers built at run time (folded with ast, never evaluated) or not resolvable."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.apibench import UNRESOLVED, parse_api_call
from janus_memory.values import Task

T2I = "Multimodal Text-to-Image"
TEXT = "Natural Language Processing Text Generation"
SD = "StableDiffusionPipeline"


def score(call: str, domain: str):
    t = Task(id="x", dataset="apibench_hf", question="q", gold="", meta={"domain": domain})
    s = get_family("apibench_hf").score(t, f"<<<domain>>>: {domain}\n<<<api_call>>>: {call}\n"
                                           "<<<api_provider>>>: HF\n<<<explanation>>>: x")
    return s.correct, s.status, s.detail["hallucination"]


WRONG_HALLU = (False, "ok", True)
RIGHT = (True, "ok", False)


@pytest.mark.parametrize("call", [
    f"org='made-up-org'; pipe = {SD}.from_pretrained(f'{{org}}/sd-turbo-9')",
    f"{SD}.from_pretrained('made-up-org' + '/sd-turbo-9')",
    f"a='made-up'; b='/sd'; {SD}.from_pretrained(a+b)",
    f"{SD}.from_pretrained('/'.join(['made','up']))",
    f"{SD}.from_pretrained(**{{'pretrained_model_name_or_path':'made-up/sd'}})",
    f"{SD}.from_pretrained(*['made-up/sd'])",
    f"ids=['made-up/sd']; {SD}.from_pretrained(ids[0])",
    f"cfg={{'m':'made-up/sd'}}; {SD}.from_pretrained(cfg['m'])",
    f"{SD}.from_pretrained(model_id := 'made-up/sd')",
    f"model_id, x = 'made-up/sd', 1; {SD}.from_pretrained(model_id)",
    f"for model_id in ['made-up/sd']: pipe = {SD}.from_pretrained(model_id)",
    f"def f(m='made-up/sd'): return {SD}.from_pretrained(m)",
    f"import os; {SD}.from_pretrained(os.getenv('X','made-up/sd'))",
    f"{SD}.from_pretrained(b'made-up/sd'.decode())",
    f"{SD}.from_pretrained(os.environ['MODEL'])",
    f"{SD}.from_pretrained(f'{{org!r}}/sd')",
    f"{SD}.from_pretrained(model_id)",
    "pipeline('text-generation', model='gpt2', tokenizer='made-up/tok')",
    "pipeline('text-generation', model='gpt2', tokenizer='made' + '-up/tok')",
    "pipeline('text-generation', model=f'{name}')",
    "pipeline('text-generation', *['gpt2'])",
])
def test_a_made_up_or_unresolved_id_is_never_credited(call):
    domain = TEXT if call.startswith("pipeline") else T2I
    assert score(call, domain) == WRONG_HALLU


@pytest.mark.parametrize("call,domain", [
    # real identifiers built by foldable constants are resolved and credited
    (f"org='runwayml'; pipe = {SD}.from_pretrained(f'{{org}}/stable-diffusion-v1-5')", T2I),
    (f"{SD}.from_pretrained('runwayml' + '/stable-diffusion-v1-5')", T2I),
    (f"a='runwayml'; b='/stable-diffusion-v1-5'; {SD}.from_pretrained(a+b)", T2I),
    (f"{SD}.from_pretrained(model_id := 'runwayml/stable-diffusion-v1-5')", T2I),
    ("pipeline('text-generation', model='gpt2', tokenizer='gpt2')", TEXT),
    ("model = AutoModelForCausalLM.from_pretrained('gpt2'); gen = pipeline('text-generation', model=model)", TEXT),
])
def test_folded_real_ids_are_credited(call, domain):
    assert score(call, domain) == RIGHT


def test_folding_never_evaluates():
    (c,) = parse_api_call("X.from_pretrained(__import__('os').getenv('M', 'a/b'))")[:1]
    assert UNRESOLVED in c.ids and "a/b" not in c.ids
    (c,) = [c for c in parse_api_call("o='a'; X.from_pretrained(f'{o}/b')") if c.name == "X.from_pretrained"]
    assert c.ids == {"a/b"} and "a/b" in c.values
    (c,) = [c for c in parse_api_call("X.from_pretrained(f'{o:>3}/b')") if c.name == "X.from_pretrained"]
    assert c.ids == {UNRESOLVED}
