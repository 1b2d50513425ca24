"""APIBench answer kinds: the Gorilla fields written without their <<< >>> markers, a generic loader of the same
library on the entry's own model, a made-up method chained onto a right call. Exact verdicts, look-alikes included."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family
from janus_memory.tasks.apibench import extract_api_call
from janus_memory.values import ChatResult, Task

TEXTGEN = "Natural Language Processing Text Generation"
T2I = "Multimodal Text-to-Image"


def verdict(domain, reply):
    s = get_family("apibench_hf").score(Task(id="x", dataset="apibench_hf", question="q", gold="",
                                             meta={"domain": domain}), reply)
    return s.correct, s.status, bool(s.detail.get("hallucination"))


# ------------------------------------------------------------------------- fields without their markers

GPT2 = "pipeline('text-generation', model='gpt2')"


@pytest.mark.parametrize("reply", [
    f"domain: {TEXTGEN}\napi_call: {GPT2}\napi_provider: Hugging Face Transformers\nexplanation: loads GPT-2",
    f"**api_call**: `{GPT2}`\n**api_provider**: Hugging Face Transformers",
    f"- domain: {TEXTGEN}\n- api_call: {GPT2}\n- api_provider: Hugging Face Transformers",
    f"api_call:\n```python\n{GPT2}\n```\nexplanation: loads GPT-2",
    f"API_CALL: {GPT2}",
    f"<<<domain>>>: {TEXTGEN}\n<<<api_call>>>: {GPT2}\n<<<explanation>>>: the api_call: pipeline('x', model='no/such')",
])
def test_fields_without_markers_are_read(reply):
    assert extract_api_call(reply) == GPT2
    assert verdict(TEXTGEN, reply) == (True, "ok", False)


@pytest.mark.parametrize("reply", [
    f"I would use an api_call to load gpt2: {GPT2} is the one.",
    f"Use {GPT2}.",
    f"The api_call field is {GPT2}",
])
def test_prose_that_names_the_field_is_no_field(reply):
    assert verdict(TEXTGEN, reply) == (False, "unparsed", False)


def test_a_bare_field_cut_off_by_the_token_limit_is_truncated():
    cut = ChatResult(text=f"domain: {TEXTGEN}\napi_call: {GPT2}", finish_reason="length")
    assert verdict(TEXTGEN, cut) == (False, "truncated", False)
    done = ChatResult(text=f"api_call: {GPT2}\napi_provider: Hugging Face", finish_reason="length")
    assert verdict(TEXTGEN, done) == (True, "ok", False)


# ------------------------------------------------------------------------- a generic loader on the entry's model

@pytest.mark.parametrize("call,domain", [
    ("DiffusionPipeline.from_pretrained('prompthero/openjourney')", T2I),
    ("diffusers.DiffusionPipeline.from_pretrained('CompVis/stable-diffusion-v1-4', torch_dtype=torch.float16)", T2I),
    ("DiffusionPipeline.from_pretrained('google/ddpm-cat-256')", "Computer Vision Unconditional Image Generation"),
    ("AutoModelForSequenceClassification.from_pretrained('joeddav/xlm-roberta-large-xnli')",
     "Natural Language Processing Zero-Shot Classification"),
    ("AutoModelForImageClassification.from_pretrained('nateraw/vit-age-classifier')",
     "Computer Vision Image Classification"),
    ("AutoModelForSeq2SeqLM.from_pretrained('cointegrated/rut5-base-absum')",
     "Natural Language Processing Summarization"),
    ("AutoModelForSpeechSeq2Seq.from_pretrained('openai/whisper-tiny.en')", "Audio Automatic Speech Recognition"),
    ("AutoModelForTableQuestionAnswering.from_pretrained('google/tapas-mini-finetuned-sqa')",
     "Natural Language Processing Table Question Answering"),
    ("AutoModel.from_pretrained('setu4993/LaBSE')", "Natural Language Processing Sentence Similarity"),
])
def test_a_generic_loader_on_the_entrys_model_is_right(call, domain):
    assert verdict(domain, f"<<<api_call>>>: {call}\n<<<api_provider>>>: Hugging Face") == (True, "ok", False)


@pytest.mark.parametrize("call,domain,hallucination", [
    ("DiffusionPipeline.from_pretrained('made-up/stable-diffusion-9')", T2I, True),  # not a real model
    ("DiffusionPipeline.from_pretrained('lllyasviel/sd-controlnet-canny')", "Computer Vision Image-to-Image", True),
    ("DiffusionPipeline.from_pretrained('nitrosocke/mo-di-diffusion')", "Multimodal Text-to-Video", True),
    ("AutoModelForTokenClassification.from_pretrained('joeddav/xlm-roberta-large-xnli')",
     "Natural Language Processing Zero-Shot Classification", True),  # another head
    ("AutoModelForQuestionAnswering.from_pretrained('google/tapas-mini-finetuned-sqa')",
     "Natural Language Processing Table Question Answering", True),
    ("AutoModel.from_pretrained('nateraw/vit-age-classifier')", "Computer Vision Image Classification", True),
    ("TFAutoModelForSequenceClassification.from_pretrained('joeddav/xlm-roberta-large-xnli')",
     "Natural Language Processing Zero-Shot Classification", True),  # the TensorFlow class of a torch entry
    ("AutoModelForSequenceClassification.from_pretrained('prompthero/openjourney')", T2I, True),  # other library
])
def test_a_generic_loader_that_loads_something_else_is_not_right(call, domain, hallucination):
    assert verdict(domain, f"<<<api_call>>>: {call}\n<<<api_provider>>>: Hugging Face") == (False, "ok",
                                                                                               hallucination)


def test_generic_covers():
    from janus_memory.tasks.apibench_match import generic_covers

    assert generic_covers("DiffusionPipeline", "StableDiffusionPipeline", "['diffusers', 'torch']")
    assert not generic_covers("DiffusionPipeline", "Pipeline", "pyannote.audio 2.1")
    assert not generic_covers("DiffusionPipeline", "TuneAVideoPipeline", "['torch', 'tuneavideo']")
    assert generic_covers("AutoModelForSeq2SeqLM", "MarianMTModel", "transformers")
    assert not generic_covers("AutoModelForSeq2SeqLM", "WhisperForConditionalGeneration", "transformers")
    assert generic_covers("AutoTokenizer", "TapasTokenizer", "transformers")
    assert not generic_covers("AutoModel", "ControlNetModel", "['diffusers', 'transformers']")


# ------------------------------------------------------------------------- a made-up method chained on a right call

CONV = "AutoModel.from_pretrained('YituTech/conv-bert-base')"
FE = "Natural Language Processing Feature Extraction"


@pytest.mark.parametrize("call", [
    f"{CONV}.quantize_to_int2()",
    f"{CONV}.to('cuda').turbo_boost(level=3)",
    f"model = {CONV}; model.summon_embeddings('text')",
    f"{GPT2}.write_story('a dragon')",
])
def test_a_made_up_method_on_a_right_call_is_a_hallucination(call):
    domain = TEXTGEN if "gpt2" in call else FE
    assert verdict(domain, f"<<<api_call>>>: {call}\n<<<api_provider>>>: Hugging Face") == (False, "ok", True)


@pytest.mark.parametrize("call", [
    f"{CONV}.to('cuda')", f"{CONV}.eval()", f"{CONV}.half().to('cuda')",
    f"model = {CONV}; model.eval()",
    f"pipe = {GPT2}; out = pipe('Once upon a time')",
    f"tok = {CONV}; data = requests.get('https://example.org/x').json()",  # not a loaded model's method
])
def test_real_methods_on_a_right_call_still_count(call):
    domain = TEXTGEN if "gpt2" in call else FE
    assert verdict(domain, f"<<<api_call>>>: {call}\n<<<api_provider>>>: Hugging Face") == (True, "ok", False)
