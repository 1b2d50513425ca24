"""APIBench identifiers through variables, unquoted pool entries, 2024 renames, bold field markers."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.apibench import RENAMED_2024, UNRESOLVED, canonical_id, extract_api_call, parse_api_call
from janus_memory.values import Task

T2I = "Multimodal Text-to-Image"
FILL = "Natural Language Processing Fill-Mask"
TEXT = "Natural Language Processing Text Generation"


def score(call: str, domain: str, *, template="<<<domain>>>: {d}\n<<<api_call>>>: {c}\n<<<api_provider>>>: HF\n"
                                              "<<<explanation>>>: x"):
    t = Task(id="x", dataset="apibench_hf", question="q", gold="", meta={"domain": domain})
    s = get_family("apibench_hf").score(t, template.format(d=domain, c=call))
    return s.correct, s.status, s.detail["hallucination"]


RIGHT, WRONG_HALLU = (True, "ok", False), (False, "ok", True)


@pytest.mark.parametrize("call,domain,expected", [
    # made-up repositories through a variable: resolved, refused, flagged
    ("model_id = 'made-up-org/sd-turbo-9'; pipe = StableDiffusionPipeline.from_pretrained(model_id, "
     "torch_dtype=torch.float16)", T2I, WRONG_HALLU),
    ("model_id = \"made-up-org/sd-turbo-9\"\npipe = StableDiffusionPipeline.from_pretrained(model_id)", T2I, WRONG_HALLU),
    ("repo = 'nobody/imaginary-bert'; tok = AutoTokenizer.from_pretrained(repo); "
     "m = AutoModelForMaskedLM.from_pretrained(repo)", FILL, WRONG_HALLU),
    ("name = 'no/such-gpt'; gen = pipeline('text-generation', model=name)", TEXT, WRONG_HALLU),
    ("model_id: str = 'made-up/sd'; StableDiffusionPipeline.from_pretrained(model_id)", T2I, WRONG_HALLU),
    # a real repository through a variable: right
    ("model_id = 'runwayml/stable-diffusion-v1-5'; pipe = StableDiffusionPipeline.from_pretrained(model_id, "
     "torch_dtype=torch.float16)", T2I, RIGHT),
    ("m = 'gpt2'; gen = pipeline('text-generation', model=m)", TEXT, RIGHT),
    # the last assignment counts
    ("model_id = 'runwayml/stable-diffusion-v1-5'; model_id = 'made-up/sd'; "
     "StableDiffusionPipeline.from_pretrained(model_id)", T2I, WRONG_HALLU),
    # pool entries stored unquoted (stabilityai/sd-x2-latent-upscaler, runwayml/stable-diffusion-v1-5): a correctly
    # quoted call is right, a made-up one is still a hallucination
    ("StableDiffusionLatentUpscalePipeline.from_pretrained('stabilityai/sd-x2-latent-upscaler', "
     "torch_dtype=torch.float16)", "Multimodal Text-to-Image", RIGHT),
    ("StableDiffusionPipeline.from_pretrained('runwayml/stable-diffusion-v1-5', torch_dtype=torch.float16)", T2I, RIGHT),
    ("StableDiffusionPipeline.from_pretrained(runwayml/stable-diffusion-v1-5, torch_dtype=torch.float16)", T2I, RIGHT),
    ("StableDiffusionLatentUpscalePipeline.from_pretrained('stabilityai/sd-x9-latent-upscaler')", T2I, WRONG_HALLU),
    # 2024 renames are aliases of the database's names
    ("pipeline('fill-mask', model='FacebookAI/roberta-base')", FILL, RIGHT),
    ("pipeline('fill-mask', model='facebookai/roberta-large')", FILL, RIGHT),
    ("pipeline('fill-mask', model='google-bert/bert-base-uncased')", FILL, RIGHT),
    ("pipeline('fill-mask', model='distilbert/distilroberta-base')", FILL, RIGHT),
    ("pipeline('fill-mask', model='FacebookAI/xlm-roberta-base')", FILL, RIGHT),
    ("pipeline('fill-mask', model='albert/albert-base-v2')", FILL, RIGHT),
    ("pipeline('fill-mask', model='almanach/camembert-base', tokenizer='almanach/camembert-base')", FILL, RIGHT),
    ("pipeline('text-generation', model='openai-community/gpt2')", TEXT, RIGHT),
    ("pipeline('text-generation', model='distilbert/distilgpt2')", TEXT, RIGHT),
    ("T5Model.from_pretrained('google-t5/t5-small')", "Natural Language Processing Text2Text Generation", RIGHT),
    ("model_id = 'FacebookAI/roberta-base'; unmasker = pipeline('fill-mask', model=model_id)", FILL, RIGHT),
    # ... but only under the organisation that took the name over, and only for names the database knows
    ("pipeline('fill-mask', model='google-bert/roberta-base')", FILL, WRONG_HALLU),
    ("pipeline('fill-mask', model='FacebookAI/bert-base-uncased')", FILL, WRONG_HALLU),
    ("pipeline('fill-mask', model='FacebookAI/roberta-base-x9')", FILL, WRONG_HALLU),
    ("pipeline('text-generation', model='openai-community/gpt5')", TEXT, WRONG_HALLU),
])
def test_identifiers(call, domain, expected):
    assert score(call, domain) == expected


@pytest.mark.parametrize("template", [
    "**<<<domain>>>**: {d}\n**<<<api_call>>>**: {c}\n**<<<api_provider>>>**: Hugging Face\n**<<<explanation>>>**: x",
    "**<<<domain>>>:** {d}\n**<<<api_call>>>:** {c}\n**<<<api_provider>>>:** Hugging Face",
    "**<<<api_call>>>**: `{c}`\n**<<<api_provider>>>**: Hugging Face",
    "- **<<<domain>>>**: {d}\n- **<<<api_call>>>**: {c}\n- **<<<api_provider>>>**: Hugging Face",
    "__<<<api_call>>>__: {c}\n__<<<api_provider>>>__: HF",
    "*<<<api_call>>>*: {c}",
    "### <<<domain>>>: {d}\n### <<<api_call>>>: {c}\n### <<<api_provider>>>: Hugging Face",
])
def test_bold_field_markers(template):
    assert score("pipeline('fill-mask', model='roberta-base')", FILL, template=template) == RIGHT
    assert score("pipeline('fill-mask', model='no-org/roberta-base-x9')", FILL, template=template) == WRONG_HALLU


def test_bold_marker_extraction_is_exact():
    assert extract_api_call("**<<<api_call>>>**: pipeline('x')\n**<<<api_provider>>>**: HF") == "pipeline('x')"
    assert extract_api_call("- **<<<api_call>>>**: f('a')\n- **<<<explanation>>>**: b") == "f('a')"


def test_alias_table():
    assert canonical_id("FacebookAI/roberta-base") == "roberta-base"
    assert canonical_id("google-bert/bert-large-cased") == "bert-large-cased"
    assert canonical_id("openai-community/roberta-base-openai-detector") == "roberta-base-openai-detector"
    assert canonical_id("stable-diffusion-v1-5/stable-diffusion-v1-5") == "runwayml/stable-diffusion-v1-5"
    assert canonical_id("facebook/bart-large") == "facebook/bart-large"  # never moved
    assert canonical_id("google-bert/roberta-base") == "google-bert/roberta-base"
    assert canonical_id("google-t5/t5-") == "google-t5/t5-"  # a bare prefix is no name
    assert canonical_id("roberta-base") == "roberta-base"
    assert set(RENAMED_2024) >= {"facebookai", "google-bert", "openai-community", "distilbert"}


def test_variable_resolution_in_the_parser():
    (c,) = [c for c in parse_api_call("model_id = 'a/b'; X.from_pretrained(model_id, revision='fp16')")
            if c.name == "X.from_pretrained"]
    assert c.ids == {"a/b"} and c.values == {"a/b", "fp16"}
    # a name bound to nothing foldable is an unresolved identifier (never a database match)
    (c,) = parse_api_call("X.from_pretrained(model_id)")
    assert c.ids == {UNRESOLVED} and c.values == frozenset()
