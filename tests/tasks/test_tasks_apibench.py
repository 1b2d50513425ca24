"""APIBench-HF extraction + AST matching (C18) and the gold set."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.apibench import apibench_summary, extract_api_call, parse_api_call
from janus_memory.values import ChatResult, Task


def _task(domain="Natural Language Processing Text Generation"):
    return Task(id="x", dataset="apibench_hf", question="q", gold="", meta={"domain": domain})


def test_c18_missing_field_is_unparsed():
    fam = get_family("apibench_hf")
    s = fam.score(_task(), "<<<domain>>>: Natural Language Processing Text Generation\n<<<explanation>>>: use gpt2")
    assert (s.correct, s.status, s.detail["hallucination"], s.detail["unparsed"]) == (False, "unparsed", False, True)


def test_c18_import_then_call_is_found():
    fam = get_family("apibench_hf")
    reply = ("<<<api_call>>>: from transformers import pipeline; gen = pipeline('text-generation', model='gpt2')\n"
             "<<<api_provider>>>: Hugging Face Transformers")
    s = fam.score(_task(), reply)
    assert s.correct and s.status == "ok" and "gpt2" in s.detail["matched"] and not s.detail["hallucination"]
    assert not fam.score(_task("Audio Text-to-Speech"), reply).correct  # right call, wrong domain


def test_c18_unbalanced_is_unparsed_without_exception():
    s = get_family("apibench_hf").score(_task(), "<<<api_call>>>: pipeline('text-generation', model='gpt2'")
    assert (s.correct, s.status, s.detail["hallucination"]) == (False, "unparsed", False)


def test_hallucination():
    s = get_family("apibench_hf").score(_task(), "<<<api_call>>>: AutoModel.from_pretrained('no-such-org/no-such-model')")
    assert s.status == "ok" and not s.correct and s.detail["hallucination"]
    s = get_family("apibench_hf").score(_task(), ChatResult(text="<<<api_call>>>: pipe", finish_reason="length"))
    assert not s.correct


def test_parse_repairs():
    assert parse_api_call("AutoModel.from_pretrained('Helsinki-NLP/opus-mt-sv-en').")[0].values == \
        frozenset({"Helsinki-NLP/opus-mt-sv-en"})
    assert parse_api_call("pipeline('text-to-image', model=SG161222/Realistic_Vision_V1.4)")[0].values == \
        frozenset({"text-to-image", "SG161222/Realistic_Vision_V1.4"})
    assert parse_api_call("pipeline('x', model='y') should be changed to Other()") is not None
    assert parse_api_call("") is None
    assert extract_api_call("<<<api_call>>>: ```python\nf('a')\n```\n<<<code>>>: x") == "f('a')"


def test_c18_all_911_golds_score_correct():
    sp = load_split("apibench_hf", "all")
    fam = get_family("apibench_hf")
    outs = [f"<<<domain>>>: {t.meta['domain']}\n<<<api_call>>>: {t.gold}\n<<<api_provider>>>: {t.meta['provider']}\n"
            f"<<<explanation>>>: loads the model" for t in sp.tasks]
    scores = fam.score_many(sp.tasks, outs, workers=2)
    summ = apibench_summary(scores)
    assert summ == {"n": 911, "accuracy": 1.0, "hallucination_rate": 0.0, "unparsed_rate": 0.0}


def test_truncated_inside_api_call_field():
    fam = get_family("apibench_hf")
    s = fam.score(_task(), ChatResult(text="<<<api_call>>>: pipeline('text-generation', model='gpt2')",
                                      finish_reason="length"))
    assert s.status == "truncated" and not s.correct
    s = fam.score(_task(), ChatResult(text="<<<api_call>>>: pipeline('text-generation', model='gpt2')\n<<<api_provider>>>: HF"
                                      "\n<<<explanation>>>: It loads", finish_reason="length"))
    assert s.correct


TG = "Natural Language Processing Text Generation"
# An invented model/repo is a hallucination, even when the database holds the same function with fewer
# arguments (``pipeline('text-generation')``) or another call in the reply is real. (api_call, domain) -> expected.
INVENTED = [
    ("pipeline('text-generation', model='no-such-org/gpt-neo-999')", TG),
    ("pipeline('sentiment-analysis', model='acme/imaginary-sentiment')",
     "Natural Language Processing Text Classification"),
    ("pipeline('text-classification', model='fake/model', tokenizer='fake/model')",
     "Natural Language Processing Text Classification"),
    ("pipeline('translation', model='Helsinki-NLP/opus-mt-xx-yy')", "Natural Language Processing Translation"),
    ("pipeline(task='fill-mask', model='bert-base-imaginary')", "Natural Language Processing Fill-Mask"),
    ("pipeline('text-generation', 'made-up/model')", TG),
    ("pipeline('text-to-image', model=Imaginary/DreamModel)", "Multimodal Text-to-Image"),
    ("AutoModel.from_pretrained('bert-base-uncased-but-invented')", "Natural Language Processing Feature Extraction"),
    ("tokenizer = AutoTokenizer.from_pretrained('gpt2'); model = AutoModelForCausalLM.from_pretrained('imaginary/gpt5')",
     TG),
    ("hf_hub_download(repo_id='fake-user/fake-repo', filename='model.pkl')", "Tabular Tabular Classification"),
    ("SentenceTransformer('sentence-transformers/all-imaginary-v9')",
     "Natural Language Processing Sentence Similarity"),
]


@pytest.mark.parametrize("call,domain", INVENTED)
def test_invented_model_is_hallucination(call, domain):
    s = get_family("apibench_hf").score(_task(domain), f"<<<domain>>>: {domain}\n<<<api_call>>>: {call}\n"
                                        "<<<api_provider>>>: Hugging Face Transformers")
    assert (s.correct, s.status, s.detail["hallucination"], s.detail["matched"]) == (False, "ok", True, [])
    assert s.detail["unknown_ids"] != []


@pytest.mark.parametrize("call,domain,correct", [
    ("pipeline('text-generation', model='gpt2')", TG, True),
    ("pipeline('text-generation')", TG, True),  # the database's own model-less entry
    ("transformers.pipeline('text-generation', model='gpt2')", TG, True),  # module prefix
    ("pipeline('text-generation', model='gpt2')", "Audio Text-to-Speech", False),  # real call, wrong domain
    ("pipeline('text-to-image', model=Lykon/DreamShaper)", "Multimodal Text-to-Image", True),  # unquoted, real
])
def test_real_calls_still_match(call, domain, correct):
    s = get_family("apibench_hf").score(_task(domain), f"<<<api_call>>>: {call}\n<<<api_provider>>>: HF")
    assert (s.correct, s.detail["hallucination"], s.detail["unknown_ids"]) == (correct, False, [])


@pytest.mark.parametrize("call,correct,hallucination", [
    ("joblib.load(cached_download(hf_hub_url('julien-c/wine-quality', 'sklearn_model.joblib')))", True, False),
    ("joblib.load(cached_download(hf_hub_url('invented-org/wine-quality-x9', 'sklearn_model.joblib')))", False, True),
    ("load_model(cached_download(hf_hub_url('invented/dummy-titanic', 'titanic_model.h5')))", False, True),
])
def test_nested_identifier_counts(call, correct, hallucination):
    """The identifier inside a nested call (hf_hub_url inside joblib.load) must match too."""
    s = get_family("apibench_hf").score(_task("Tabular Tabular Classification"), f"<<<api_call>>>: {call}\n<<<x>>>")
    assert (s.correct, s.detail["hallucination"]) == (correct, hallucination)
