"""APIBench spellings that are right (a model id as the library resolves it, pipeline task aliases, shell commands
however quoted or fenced) under the strict checker, made-up ids still hallucinations; and the authors' checker
(``checker: paper``), whose verdict is kept but which never calls a real model id a hallucination."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.apibench import extract_api_call, shell_command
from janus_memory.tasks.apibench_paper import candidate_text
from janus_memory.tasks.checker_paper import with_checker
from janus_memory.values import ChatResult, Task

SIM = "Natural Language Processing Sentence Similarity"
CLS = "Computer Vision Image Classification"
TXT = "Natural Language Processing Text Classification"
TOK = "Natural Language Processing Token Classification"
RL = "Reinforcement Learning"


def reply(call, domain):
    return f"<<<domain>>>: {domain}\n<<<api_call>>>: {call}\n<<<api_provider>>>: Hugging Face\n<<<explanation>>>: x"


def strict(call, domain):
    t = Task(id="x", dataset="apibench_hf", question="q", gold="", meta={"domain": domain})
    s = get_family("apibench_hf").score(t, reply(call, domain))
    return s.correct, s.status, s.detail["hallucination"]


def paper(call_or_text, domain, raw=False):
    t = Task(id="x", dataset="apibench_hf", question="q", gold="", meta={"domain": domain})
    s = with_checker(get_family("apibench_hf"), "paper").score(t, call_or_text if raw else reply(call_or_text, domain))
    return s.correct, s.detail["hallucination"], s.detail["strict_correct"], s.detail["paper_reason"]


RIGHT = (True, "ok", False)
MADE_UP = (False, "ok", True)


@pytest.mark.parametrize("call,domain", [
    # sentence-transformers prefixes its organisation to a name without one
    ("SentenceTransformer('all-MiniLM-L6-v2')", SIM),
    ("SentenceTransformer('paraphrase-multilingual-MiniLM-L12-v2', device='cpu')", SIM),
    ("from sentence_transformers import SentenceTransformer; m = SentenceTransformer('bert-base-nli-mean-tokens')", SIM),
    # timm: the hub prefix, the organisation, or the bare pretrained tag
    ("timm.create_model('hf_hub:timm/vit_tiny_patch16_224.augreg_in21k_ft_in1k', pretrained=True)", CLS),
    ("timm.create_model('vit_tiny_patch16_224.augreg_in21k_ft_in1k', pretrained=True)", CLS),
    ("timm.create_model('timm/convnext_base.fb_in1k', pretrained=True)", CLS),
    ("timm.create_model('hf_hub:timm/mobilenetv3_large_100.ra_in1k', pretrained=True)", CLS),
    # pipeline task aliases transformers accepts, both ways
    ("pipeline('text-classification', model='lvwerra/distilbert-imdb')", TXT),  # the pool writes sentiment-analysis
    ("pipeline('token-classification', model='dslim/bert-base-NER-uncased')", TOK),  # the pool writes ner
    ("pipeline(task='ner', model='dslim/bert-base-NER-uncased')", TOK),
    # shell commands however quoted or fenced
    ("mlagents-load-from-hf --repo-id='Raiden-1001/poca-Soccerv7.1' --local-dir='./downloads'", RL),
    ('mlagents-load-from-hf --repo-id="Raiden-1001/poca-Soccerv7.1" --local-dir="./downloads"', RL),
    ("mlagents-load-from-hf --repo-id Raiden-1001/poca-Soccerv7.1 --local-dir ./downloads", RL),
    ("mlagents-load-from-hf --local-dir=./downloads --repo-id=Raiden-1001/poca-Soccerv7.1", RL),
    ("```bash\nmlagents-load-from-hf --repo-id='0xid/poca-SoccerTwos' --local-dir='./downloads'\n```", RL),
    ("$ mlagents-load-from-hf --repo-id='0xid/poca-SoccerTwos' --local-dir='./downloads'", RL),
    ("!mlagents-load-from-hf --repo-id='0xid/poca-SoccerTwos' --local-dir='./downloads'", RL),
])
def test_right_spellings_are_right_under_the_strict_checker(call, domain):
    assert strict(call, domain) == RIGHT


@pytest.mark.parametrize("call,domain", [
    ("SentenceTransformer('all-MiniLM-L6-v9-made-up')", SIM),
    ("SentenceTransformer('made-up-org/all-MiniLM-L6-v2')", SIM),
    ("timm.create_model('hf_hub:timm/vit_imaginary_patch99.fake', pretrained=True)", CLS),
    ("timm.create_model('hf_hub:made-up/convnext_base.fb_in1k')", CLS),
    ("pipeline('sentiment-analysis', model='made-up/distilbert-imdb-x9')", TXT),
    ("mlagents-load-from-hf --repo-id='made-up/poca-Soccer-x9' --local-dir='./downloads'", RL),
])
def test_made_up_ids_stay_hallucinations(call, domain):
    assert strict(call, domain) == MADE_UP


def test_a_plain_transformers_model_keeps_its_own_name():
    # 'bert-base-uncased' is loaded as the transformers model, not as sentence-transformers/bert-base-uncased
    assert strict("SentenceTransformer('bert-base-uncased')", SIM) == MADE_UP  # not in the API database


def test_a_task_alias_does_not_turn_a_wrong_task_right():
    assert strict("pipeline('summarization', model='lvwerra/distilbert-imdb')", TXT)[0] is False


def test_shell_commands_are_compared_as_commands():
    a = shell_command("mlagents-load-from-hf --repo-id='x/y' --local-dir='./d'")
    assert a == shell_command('mlagents-load-from-hf --local-dir ./d --repo-id "x/y"')
    assert a != shell_command("mlagents-load-from-hf --repo-id='x/z' --local-dir='./d'")
    assert shell_command("pipeline('x')") is None and shell_command("ls 'unclosed") is None
    assert strict("mlagents-load-from-hf --repo-id='Raiden-1001/poca-Soccerv7.1' --local-dir='./models'", RL)[0] is False
    assert extract_api_call("<<<api_call>>>: ```bash\nls -l\n```\n<<<api_provider>>>: x") == "ls -l"


# ------------------------------------------------------------------------------- the authors' checker

def test_authors_extraction():
    assert candidate_text("<<<api_call>>>: f('a')\n<<<api_provider>>>: HF") == "f('a')"
    assert candidate_text("no field at all") == "no field at all"


@pytest.mark.parametrize("call,domain,verdict", [
    # (paper correct, paper hallucination, strict correct, their reason)
    ("SentenceTransformer('sentence-transformers/all-MiniLM-L6-v2')", SIM, (True, False, True, "correct")),
    # right under the strict checker, wrong under the authors' - but a real model id is never a hallucination
    ("SentenceTransformer('all-MiniLM-L6-v2')", SIM, (False, False, True, "no_pool_match")),
    ("mlagents-load-from-hf --repo-id=\"Raiden-1001/poca-Soccerv7.1\" --local-dir=./downloads", RL,
     (False, False, True, "parse_error")),
    # a made-up id stays a hallucination under both
    ("SentenceTransformer('made-up-org/nothing-v9')", SIM, (False, True, False, "no_pool_match")),
    # the authors' matcher credits a made-up model through the task-only required text; the strict checker does not
    ("pipeline('sentiment-analysis', model='made-up/distilbert-imdb-x9')", TXT, (True, False, False, "correct")),
])
def test_paper_checker_keeps_the_authors_verdict(call, domain, verdict):
    assert paper(call, domain) == verdict


def test_paper_checker_reads_the_thinking_as_the_authors_do():
    # their checker sees the thinking first: its first "api_call" is the one scored
    text = ChatResult(text=reply("SentenceTransformer('sentence-transformers/all-MiniLM-L6-v2')", SIM),
                      reasoning="I could use <<<api_call>>>: Foo.bar('x')\n<<<api_provider>>>: hmm")
    correct, halluc, strict_ok, reason = paper(text, SIM, raw=True)
    assert (correct, strict_ok, reason) == (False, True, "no_pool_match") and halluc is False


def test_paper_and_strict_accuracy_differ_on_real_spellings():
    sp = load_split("apibench_hf", "all")
    fam = with_checker(get_family("apibench_hf"), "paper")
    st = [t for t in sp.tasks if t.gold.startswith("SentenceTransformer('sentence-transformers/")]
    outs = [reply(t.gold.replace("sentence-transformers/", ""), t.meta["domain"]) for t in st]
    scores = fam.score_many(st, outs)
    assert len(st) == 21
    assert sum(s.detail["strict_correct"] for s in scores) == 21  # right as the library resolves them
    assert sum(s.correct for s in scores) == 0  # the authors' checker: no pool entry spells them so
    assert sum(s.detail["hallucination"] for s in scores) == 0  # and never a hallucination: the ids are real


def _respeller():
    """The audit's re-speller: a gold call in a spelling its library resolves itself (benchmarks/probes/audit_scorers.py)."""
    from janus_memory.tasks.apibench_match import library_spelling

    return library_spelling


def test_report_tables_show_the_checkers_differ_on_real_spellings(tmp_path, monkeypatch):
    """janus run (scripted replies: every test answer is its gold call, re-spelled where the library allows) and
    janus report: the strict Table 1 credits every answer, the authors' checker does not."""
    import json

    from janus_memory.cli import main
    from janus_memory.report.report import build_report
    from janus_memory.tasks.apibench import APIBenchFamily

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))

    def fake_answer(self, task, right):
        return (f"<<<domain>>>: {task.meta['domain']}\n<<<api_call>>>: {respell(task.gold)}\n"
                f"<<<api_provider>>>: {task.meta.get('provider', '')}\n<<<explanation>>>: scripted")

    respell = _respeller()
    monkeypatch.setattr(APIBenchFamily, "fake_answer", fake_answer)
    run = tmp_path / "run"
    assert main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--dataset", "apibench_hf",
                 "--updater", "memory_free", "--controller", "none", "--stream-size", "2", "--test-size", "250",
                 "--apibench-split", "registry", "--out", str(run)]) == 0
    m = json.loads((run / "summary.json").read_text())["methods"]["memory_free"]
    test = [json.loads(x) for x in (run / "memory_free" / "test.jsonl").read_text().splitlines()]
    golds = {t.id: t.gold for t in load_split("apibench_hf", "test").tasks}
    respelled = [r for r in test if respell(golds[r["task_id"]]) != golds[r["task_id"]]]
    assert (m["checker"], m["test_correct_strict"]) == ("paper", 250)
    # 9 re-spelled answers in the test split; the authors' substring match still credits 5 of them (the pool's
    # 'convnextv2_huge.fcmae_ft_in1k' is inside 'hf_hub:timm/convnextv2_huge...', 'sentiment-analysis' inside the
    # model id 'finiteautomata/beto-sentiment-analysis') and refuses 4 (org-less sentence-transformers names, the
    # double-quoted shell command)
    assert (len(respelled), sum(r["correct"] for r in respelled)) == (9, 5)
    assert m["test_correct"] == 250 - 4 - 16  # and 16 gold calls its first-entry match judges wrong
    build_report([str(run)], str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    strict_md = md.split("## Table 1 with our strict checker")[1]
    assert "| memory_free | 92.0 | 92.0 |" in md.split("## Table 1 with our strict checker")[0]
    assert "| memory_free | 100.0 | 100.0 |" in strict_md
