"""Scorer audit: every scorer over real model outputs and over its gold set (prints; no assertions).

    python benchmarks/probes/audit_scorers.py [--workers 2] [--data-dir PATH] [--skip-humaneval]

Rows: n, agreement with the reference verdict, our accuracy, unparsed and fallback rates, items/s.
- dc-trajectories (real GPT-4o / Claude 3.5 Sonnet outputs on AIME 2025, logged by the Dynamic Cheatsheet authors):
  our math scorer against DC's own verdict (its extracted answer string equal to the target). Disagreements are listed.
- MATH-500: each gold solution (last box) and ``\\boxed{gold}``; GSM8K: each gold solution ("#### N").
- MMLU-Pro Eng+Phy: the gold letter written in eight reply forms (lowercase, bold, boxed, "(D) text", ...).
- HumanEval: the 164 canonical solutions (must pass) and six forged passes per problem family sample (must fail).
- APIBench-HF: the 911 gold calls (must be correct) and the same calls with the model/repo identifier altered
  (must be hallucinations).
- What real models write (audit_kinds): reasoning left in the text, committed answers against later conditional
  mentions, corrections, unicode numerals, replies cut off mid-revision, a unit in ``\\text{}``, HumanEval program
  assembly, APIBench spellings a library resolves itself and the authors' APIBench checker.
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import sys
import time


def _row(name, n, agree, acc, unparsed, fallback, secs, extra=""):
    print(f"{name:<40} {n:>5}  agree {agree:7.2%}  acc {acc:7.2%}  unparsed {unparsed:6.2%}  "
          f"fallback {fallback:6.2%}  {n / max(secs, 1e-9):9.1f} items/s  {extra}")


def _rates(scores):
    n = len(scores) or 1
    return (sum(s.correct for s in scores) / n, sum(s.status == "unparsed" for s in scores) / n,
            sum(s.status == "fallback" for s in scores) / n)


def _timed(fam, tasks, outs, w):
    t = time.perf_counter()
    sc = fam.score_many(tasks, outs, workers=w)
    return sc, time.perf_counter() - t


def _gold_row(name, fam, tasks, outs, w, expect=True, extra=""):
    sc, secs = _timed(fam, tasks, outs, w)
    if "%s" in extra:
        extra = extra % f"{sum(s.status == 'truncated' for s in sc) / max(len(sc), 1):.2%}"
    agree = sum(s.correct == expect for s in sc) / max(len(sc), 1)
    _row(name, len(sc), agree, *_rates(sc), secs, extra)
    return sc


def audit_dc(data_dir, w):

    from janus_memory.tasks import get_family
    from janus_memory.tasks.data import read_jsonl
    from janus_memory.values import Task
    fam = get_family("aime")
    files = sorted(f for pat in ("*.jsonl", "*.jsonl.xz", "*.jsonl.gz")  # the shipped copy is xz
                   for f in glob.glob(os.path.join(data_dir, "dc-trajectories", pat)))
    all_sc, all_ref = [], []
    for f in files:
        recs = read_jsonl(f)
        tasks = [Task(id=f"{os.path.basename(f)}:{r['step']}", dataset="aime", question=r["question"],
                      gold=str(r["target"]).strip()) for r in recs]
        ref = [str(r["model_answer"]).strip() == str(r["target"]).strip() for r in recs]
        sc, secs = _timed(fam, tasks, [r["model_output"] for r in recs], w)
        agree = sum(s.correct == rf for s, rf in zip(sc, ref)) / len(sc)
        _row("dc " + os.path.basename(f).split(".jsonl")[0], len(sc), agree, *_rates(sc), secs,
             f"DC's own acc {sum(ref)/len(ref):.2%}")
        for t, s, rf, r in zip(tasks, sc, ref, recs):
            if s.correct != rf or s.status != "ok":
                print(f"    {t.id}: target {t.gold!r} DC {str(r['model_answer'])[:30]!r} ours {s.extracted!r} "
                      f"status {s.status} correct {s.correct} (DC {rf})")
        all_sc += sc
        all_ref += ref
    if all_sc:
        agree = sum(s.correct == rf for s, rf in zip(all_sc, all_ref)) / len(all_sc)
        _row("dc-trajectories (all)", len(all_sc), agree, *_rates(all_sc), float("nan"))


def audit_math(data_dir, w):
    from janus_memory.tasks import get_family, load_split
    from janus_memory.tasks.data import find_source, read_jsonl
    recs = read_jsonl(find_source(data_dir, "math500/test.jsonl", "MATH-500"))
    sp = load_split("math500", "test", data_dir=data_dir)
    fam = get_family("math500")
    fam.score(sp.tasks[0], r"\boxed{1}")  # warm the verifier workers outside the timing
    _gold_row("MATH-500 gold solutions", fam, sp.tasks, [r["solution"] for r in recs], w)
    _gold_row("MATH-500 \\boxed{gold}", fam, sp.tasks, [f"\\boxed{{{r['answer']}}}" for r in recs], w)
    # issue 26: vectors/matrices keep every entry; golds with ",\!" thousands groups are numbers
    vec = [(t, r) for t, r in zip(sp.tasks, recs) if re.search(r"\\begin\{[pb]matrix\}", r["answer"])]
    _gold_row("MATH-500 vectors, one entry per line", fam, [t for t, _ in vec],
              ["\\boxed{" + re.sub(r"\s*\\\\\s*", lambda m: " \\\\\n", r["answer"]) + "}" for _, r in vec], w)
    _gold_row("MATH-500 vectors, last entry altered", fam, [t for t, _ in vec],
              ["\\boxed{" + _alter_last_entry(r["answer"]) + "}" for _, r in vec], w, expect=False)
    grp = [(t, r) for t, r in zip(sp.tasks, recs) if ",\\!" in r["answer"]]
    _gold_row("MATH-500 ',\\!' golds as plain numbers", fam, [t for t, _ in grp],
              ["\\boxed{" + re.sub(r"[^0-9.]", "", r["answer"]) + "}" for _, r in grp], w)
    g = load_split("gsm8k", "all", data_dir=data_dir)
    sols = [r["answer"] for r in read_jsonl(find_source(data_dir, "gsm8k/test.jsonl", "GSM8K"))]
    _gold_row("GSM8K gold solutions (#### N)", get_family("gsm8k"), g.tasks, sols, w)
    _gold_row("GSM8K 'The answer is $N.00 dollars.'", get_family("gsm8k"), g.tasks,
              [f"So she pays that. The answer is ${t.gold}.00 dollars." for t in g.tasks], w)
    _gold_row("GSM8K 'Answer: N, since each box holds 8.'", get_family("gsm8k"), g.tasks,
              [f"Answer: {t.gold}, since each box holds 8." for t in g.tasks], w)
    _gold_row("GSM8K cut inside \\boxed{ (must be truncated)", get_family("gsm8k"), g.tasks,
              [f"So the answer is \\boxed{{{t.gold}}}. Double-check: \\boxed{{{t.gold[:1]}" for t in g.tasks], w,
              expect=False, extra="(truncated %s)")


def _alter_last_entry(ans: str) -> str:
    """The last number of a vector/matrix gold, plus one (a wrong last entry)."""
    nums = list(re.finditer(r"\d+", ans))
    m = nums[-1]
    return ans[:m.start()] + str(int(m.group(0)) + 1) + ans[m.end():]


MC_FORMS = ["The answer is ({l}).", "Answer: {lo}", "**Answer:** ({l})", "Therefore $\\boxed{{{l}}}$.",
            "({l}) {text}", "After checking each option, the answer is ({lo}).", "<answer>{l}</answer>",
            "Answer: I think about it carefully.\nThe answer is {l} because it fits."]


MC_FORMS_26 = ["Weighing them, the correct option is {l}.", "Answer: Option {l}", "So the answer is $\\text{{{l}}}$.",
               "$\\text{{{l}}}$"]


def audit_mc(data_dir, w):
    from janus_memory.tasks import get_family, load_split
    tasks = load_split("mmlu_pro_eng", "all", data_dir=data_dir).tasks + \
        load_split("mmlu_pro_phy", "all", data_dir=data_dir).tasks
    fam = get_family("mmlu_pro_eng")
    outs = []
    for i, t in enumerate(tasks):
        labels = t.meta.get("labels") or "ABCDEFGHIJ"
        text = t.meta["options"][labels.index(t.gold)]
        outs.append(MC_FORMS[i % len(MC_FORMS)].format(l=t.gold, lo=t.gold.lower(), text=text))
    sc = _gold_row("MMLU-Pro Eng+Phy gold letter, 8 forms", fam, tasks, outs, w)
    bad = collections.Counter(MC_FORMS[i % len(MC_FORMS)] for i, s in enumerate(sc) if not s.correct)
    for form, k in bad.items():
        print(f"    missed {k} x {form!r}")
    outs = [MC_FORMS_26[i % len(MC_FORMS_26)].format(l=t.gold) for i, t in enumerate(tasks)]
    sc = _gold_row("MMLU-Pro gold letter, 4 issue-26 forms", fam, tasks, outs, w)
    bad = collections.Counter(MC_FORMS_26[i % len(MC_FORMS_26)] for i, s in enumerate(sc) if not s.correct)
    for form, k in bad.items():
        print(f"    missed {k} x {form!r}")


FORGED = ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n", "raise SystemExit(0)\n",
          "print('PASS')\nimport os\nos._exit(0)\n", "def {ep}(*a, **k):\n    raise KeyboardInterrupt\n",
          "class E:\n    def __eq__(self, o):\n        return True\ndef {ep}(*a, **k):\n    return E()\n"]


def audit_humaneval(data_dir, w):
    from janus_memory.tasks import get_family, load_split
    sp = load_split("humaneval", "all", data_dir=data_dir)
    fam = get_family("humaneval")
    sc = _gold_row("HumanEval canonical (proof harness)", fam, sp.tasks,
                   ["```python\n" + t.meta["prompt"] + t.gold + "```" for t in sp.tasks], w)
    print(f"    backend {sc[0].detail.get('backend')}; reasons {dict(collections.Counter(s.detail.get('reason') for s in sc))}")
    usage = [t for t in sp.tasks[::4]]
    tail = ("\n\nExample usage:\n```python\nprint({ep}())\n```\n```python\nif __name__ == '__main__':\n"
            "    import unittest\n    unittest.main()\n```\nOutput:\n```\nTrue\n```")
    sc = _gold_row("HumanEval canonical + usage/main/output blocks", fam, usage,
                   ["```python\n" + t.meta["prompt"] + t.gold + "```" + tail.format(ep=t.meta["entry_point"])
                    for t in usage], w)
    print(f"    reasons {dict(collections.Counter(s.detail.get('reason') for s in sc))}")
    sample = sp.tasks[::8]
    tasks = [t for t in sample for _ in FORGED]
    outs = ["```python\n" + f.format(ep=t.meta["entry_point"]) + "```" for t in sample for f in FORGED]
    sc = _gold_row("HumanEval forged passes", fam, tasks, outs, w, expect=False)
    print(f"    reasons {dict(collections.Counter(s.detail.get('reason') for s in sc))}")


def _invent(call: str) -> str | None:
    args = call.split("(", 1)[1] if "(" in call else ""
    m = re.search(r"""(['"])([\w.@\-]+/[\w.@\-]+|[\w.@\-]{3,})\1""", args)
    # an identifier the database stores unquoted (``source=speechbrain/sepformer-...``) comes first when it does
    u = re.search(r"""(?<=[(=,])(\s*)([\w.\-]+/[\w.\-]+)(?=\s*[,)])""", args)
    if u and (not m or u.start() < m.start()):
        return call.replace(u.group(2), "invented-org/" + u.group(2).split("/")[-1] + "-x9", 1)
    if not m:
        return None
    return call.replace(m.group(0), m.group(1) + "invented-org/" + m.group(2).split("/")[-1] + "-x9" + m.group(1), 1)


def audit_apibench(data_dir, w):
    from janus_memory.tasks import get_family, load_split
    from janus_memory.tasks.apibench import apibench_summary
    sp = load_split("apibench_hf", "all", data_dir=data_dir)
    fam = get_family("apibench_hf")
    _ = fam.database  # build the index outside the timing
    fmt = "<<<domain>>>: {d}\n<<<api_call>>>: {c}\n<<<api_provider>>>: Hugging Face\n<<<explanation>>>: x"
    sc = _gold_row("APIBench-HF gold calls", fam, sp.tasks, [fmt.format(d=t.meta["domain"], c=t.gold) for t in sp.tasks], w)
    print(f"    {apibench_summary(sc)}")
    inv = [(t, _invent(t.gold)) for t in sp.tasks]
    inv = [(t, c) for t, c in inv if c]
    sc, secs = _timed(fam, [t for t, _ in inv], [fmt.format(d=t.meta["domain"], c=c) for t, c in inv], w)
    agree = sum((not s.correct) and s.detail.get("hallucination") for s in sc) / max(len(sc), 1)
    _row("APIBench-HF invented identifiers", len(sc), agree, *_rates(sc), secs, "(agree = hallucination flagged)")
    # issue 26: the identifier through a variable (the diffusers idiom), right and invented
    via = [(t, _via_variable(t.gold)) for t in sp.tasks]
    via = [(t, c) for t, c in via if c]
    _gold_row("APIBench-HF gold id via model_id variable", fam, [t for t, _ in via],
              [fmt.format(d=t.meta["domain"], c=c) for t, c in via], w)
    inv = [(t, _via_variable(_invent(t.gold) or "")) for t, _ in via]
    inv = [(t, c) for t, c in inv if c]
    sc, secs = _timed(fam, [t for t, _ in inv], [fmt.format(d=t.meta["domain"], c=c) for t, c in inv], w)
    agree = sum((not s.correct) and s.detail.get("hallucination") for s in sc) / max(len(sc), 1)
    _row("APIBench-HF invented id via variable", len(sc), agree, *_rates(sc), secs, "(agree = hallucination flagged)")
    # round 3: identifiers built at run time - folded with ast when constant, else unresolved (never credited)
    for kind in ("fstring", "concat"):
        b = [(t, _built(t.gold, kind)) for t in sp.tasks]
        b = [(t, c) for t, c in b if c]
        _gold_row(f"APIBench-HF gold id built by {kind}", fam, [t for t, _ in b],
                  [fmt.format(d=t.meta["domain"], c=c) for t, c in b], w)
        b = [(t, _built(_invent(t.gold) or "", kind)) for t, _ in b]
        b = [(t, c) for t, c in b if c]
        sc, secs = _timed(fam, [t for t, _ in b], [fmt.format(d=t.meta["domain"], c=c) for t, c in b], w)
        agree = sum((not s.correct) and s.detail.get("hallucination") for s in sc) / max(len(sc), 1)
        _row(f"APIBench-HF invented id by {kind}", len(sc), agree, *_rates(sc), secs, "(agree = hallucination flagged)")
    for kind in ("subscript", "getenv"):
        b = [(t, _built(t.gold, kind)) for t in sp.tasks]
        b = [(t, c) for t, c in b if c]
        sc, secs = _timed(fam, [t for t, _ in b], [fmt.format(d=t.meta["domain"], c=c) for t, c in b], w)
        agree = sum((not s.correct) and s.detail.get("hallucination") for s in sc) / max(len(sc), 1)
        _row(f"APIBench-HF id via {kind} (unresolved)", len(sc), agree, *_rates(sc), secs,
             "(agree = not credited, flagged)")
    ren = [(t, _renamed(t.gold)) for t in sp.tasks]
    ren = [(t, c) for t, c in ren if c]
    _gold_row("APIBench-HF gold id in its 2024 name", fam, [t for t, _ in ren],
              [fmt.format(d=t.meta["domain"], c=c) for t, c in ren], w)
    _gold_row("APIBench-HF gold, bold field markers", fam, sp.tasks,
              [fmt.replace("<<<api_call>>>:", "**<<<api_call>>>**:").format(d=t.meta["domain"], c=t.gold)
               for t in sp.tasks], w)


def _built(call: str, kind: str) -> str | None:
    """``X.from_pretrained('org/name', ...)`` with the identifier built at run time: ``fstring`` (``o = 'org';
    f'{o}/name'``), ``concat`` (``'org' + '/name'``), or unresolvable ``subscript`` (``ids = [...]; ids[0]``) /
    ``getenv`` (``os.getenv('M', 'org/name')``)."""
    m = re.match(r"""^([\w.]+\.from_pretrained\()(['"])([^'"]+)\2""", call.strip())
    if not m or (kind in ("fstring", "concat") and "/" not in m.group(3)):
        return None
    org, _, name = m.group(3).partition("/")
    rest = call.strip()[m.end():]
    return {"fstring": f"o = '{org}'; {m.group(1)}f'{{o}}/{name}'{rest}",
            "concat": f"{m.group(1)}'{org}' + '/{name}'{rest}",
            "subscript": f"ids = ['{m.group(3)}']; {m.group(1)}ids[0]{rest}",
            "getenv": f"import os; {m.group(1)}os.getenv('M', '{m.group(3)}'){rest}"}[kind]


def _via_variable(call: str) -> str | None:
    """``X.from_pretrained('org/name', ...)`` -> ``model_id = 'org/name'; X.from_pretrained(model_id, ...)``."""
    m = re.match(r"""^([\w.]+\.from_pretrained\()(['"])([^'"]+)\2""", call.strip())
    if not m:
        return None
    return f"model_id = {m.group(2)}{m.group(3)}{m.group(2)}; {m.group(1)}model_id{call.strip()[m.end():]}"


# the 2024 Hugging Face moves (a sample of the families; the scorer's full table is apibench.RENAMED_2024)
_MOVES = [("bert-", "google-bert"), ("roberta-base", "FacebookAI"), ("roberta-large", "FacebookAI"),
          ("xlm-", "FacebookAI"), ("gpt2", "openai-community"), ("distilbert-", "distilbert"),
          ("distilgpt2", "distilbert"), ("distilroberta-", "distilbert"), ("t5-", "google-t5"), ("albert-", "albert"),
          ("xlnet-", "xlnet"), ("camembert-", "almanach")]


def _renamed(call: str) -> str | None:
    """The gold call with its first org-less identifier of a moved family written under its 2024 organisation."""
    for m in re.finditer(r"""(['"])([\w.\-]+)\1""", call):
        name = m.group(2)
        for old, org in _MOVES:
            if (name == old or (old.endswith("-") and name.startswith(old))) and "openai-detector" not in name:
                return call[:m.start()] + f"{m.group(1)}{org}/{name}{m.group(1)}" + call[m.end():]
    return None


# ------------------------------------------------------------------------ what real models write (scoring pass 4)

_FW = str.maketrans("0123456789ABCDEFGHIJ", "０１２３４５６７８９ＡＢＣＤＥＦＧＨＩＪ")


def _kind_row(name, fam, tasks, outs, w, expect=True, status=None):
    """A row whose agreement is "correct == expect" or, with ``status``, "the score's status is that status"."""
    sc, secs = _timed(fam, tasks, outs, w)
    ok = [s.status == status if status else s.correct == expect for s in sc]
    _row(name, len(sc), sum(ok) / max(len(sc), 1), *_rates(sc), secs,
         f"(must be {status})" if status else ("(must be right)" if expect else "(must be wrong)"))
    return sc


def audit_kinds(data_dir, w, skip_humaneval=False):
    """Reasoning left in the text, committed vs conditional mentions, corrections, unicode numerals, replies cut off
    mid-revision, labelled values, program assembly and APIBench spellings, on the real gold sets."""
    from janus_memory.tasks import get_family, load_split
    from janus_memory.tasks.checker_paper import with_checker
    from janus_memory.values import ChatResult
    g = [t for t in load_split("gsm8k", "all", data_dir=data_dir).tasks if t.gold.lstrip("-").isdigit()]
    fam = get_family("gsm8k")
    nxt = {t.id: str(int(t.gold) + 1) for t in g}
    _kind_row("GSM8K draft box in <think>, then 'The answer is N'", fam, g,
              [f"<think>\nMaybe \\boxed{{{nxt[t.id]}}}? No.\n</think>\n\nThe answer is {t.gold}." for t in g], w)
    _kind_row("GSM8K unclosed <think> holding the answer", fam, g,
              [f"<think>\nThe answer is {t.gold}. Let me double-check" for t in g], w, status="truncated")
    _kind_row("GSM8K box, then a conditional box", fam, g,
              [f"The answer is \\boxed{{{t.gold}}}.\n\n(If you forget the tax, you would get \\boxed{{{nxt[t.id]}}}.)"
               for t in g], w)
    _kind_row("GSM8K box, then a real correction to N", fam, g,
              [f"\\boxed{{{nxt[t.id]}}}\n\nHmm, I counted one item twice, so the answer is {t.gold}." for t in g], w)
    _kind_row("GSM8K box N, then a correction to N+1", fam, g,
              [f"\\boxed{{{t.gold}}}\n\nWait, I counted one item twice, so the answer is {nxt[t.id]}." for t in g], w,
              expect=False)
    pos = [t for t in g if int(t.gold) > 0]
    _kind_row("GSM8K U+2212 minus on a positive gold", fam, pos, [f"The answer is \u2212{t.gold}." for t in pos], w,
              expect=False)
    _kind_row("GSM8K full-width digits", fam, g, [f"The answer is {t.gold.translate(_FW)}." for t in g], w)
    _kind_row("GSM8K cut off re-checking (length)", fam, g,
              [ChatResult(text=f"The answer is {t.gold}.\n\nWait, let me re-check the second step: 3 x", finish_reason="length")
               for t in g], w, status="truncated")
    _kind_row("GSM8K \\boxed{\\text{N dollars}}", fam, g, [f"\\boxed{{\\text{{{t.gold} dollars}}}}" for t in g], w)
    tasks = load_split("mmlu_pro_eng", "all", data_dir=data_dir).tasks + \
        load_split("mmlu_pro_phy", "all", data_dir=data_dir).tasks
    mc = get_family("mmlu_pro_eng")
    other = {t.id: (t.meta.get("labels") or "ABCDEFGHIJ")[((t.meta.get("labels") or "ABCDEFGHIJ").index(t.gold) + 1)
                                                           % len(t.meta["options"])] for t in tasks}
    _kind_row("MMLU-Pro other letter in <think>, then '(X) text'", mc, tasks,
              [f"<think>The answer is ({other[t.id]}).</think>\n\n({t.gold}) "
               f"{t.meta['options'][(t.meta.get('labels') or 'ABCDEFGHIJ').index(t.gold)]}" for t in tasks], w)
    _kind_row("MMLU-Pro unclosed <think> holding the answer", mc, tasks,
              [f"<think>The answer is ({t.gold}), let me verify" for t in tasks], w, status="truncated")
    _kind_row("MMLU-Pro answer, then a conditional other letter", mc, tasks,
              [f"The answer is ({t.gold}). If we ignored friction, the answer is ({other[t.id]})." for t in tasks], w)
    _kind_row("MMLU-Pro answer, then a correction to another", mc, tasks,
              [f"The answer is ({t.gold}). Wait, I made an error; the answer is ({other[t.id]})." for t in tasks], w,
              expect=False)
    _kind_row("MMLU-Pro full-width letter", mc, tasks, [f"Answer: {t.gold.translate(_FW)}" for t in tasks], w)
    _kind_row("MMLU-Pro cut off re-checking (length)", mc, tasks,
              [ChatResult(text=f"The answer is ({t.gold}).\n\nHmm, let me double-check option ({other[t.id]}): the",
                          finish_reason="length") for t in tasks], w, status="truncated")
    if not skip_humaneval:
        he = load_split("humaneval", "all", data_dir=data_dir).tasks[::4]
        hf = get_family("humaneval")
        _kind_row("HumanEval canonical after 'from __future__'", hf, he,
                  ["```python\nfrom __future__ import annotations\n" + t.meta["prompt"] + t.gold + "```" for t in he], w)
        _kind_row("HumanEval canonical fenced under a list item", hf, he,
                  ["1. The code:\n\n   ```python\n" + "\n".join("   " + ln for ln in (t.meta["prompt"] + t.gold).splitlines())
                   + "\n   ```\n" for t in he], w)
        ep = {t.id: t.meta["entry_point"] for t in he}
        _kind_row("HumanEval helper in an earlier block", hf, he,
                  ["```python\n" + (t.meta["prompt"] + t.gold).replace(f"def {ep[t.id]}(", "def _impl(", 1)
                   + f"```\nThen:\n```python\ndef {ep[t.id]}(*args):\n    return _impl(*args)\n```" for t in he], w)
    ap = load_split("apibench_hf", "all", data_dir=data_dir).tasks
    fmt = "<<<domain>>>: {d}\n<<<api_call>>>: {c}\n<<<api_provider>>>: Hugging Face\n<<<explanation>>>: x"
    from janus_memory.tasks.apibench_match import library_spelling

    rs = [(t, library_spelling(t.gold)) for t in ap]
    rs = [(t, c) for t, c in rs if c != t.gold]
    strict = get_family("apibench_hf")
    _kind_row("APIBench-HF gold re-spelled (library resolves it)", strict, [t for t, _ in rs],
              [fmt.format(d=t.meta["domain"], c=c) for t, c in rs], w)
    for name, items in (("APIBench-HF gold re-spelled", rs), ("APIBench-HF gold calls", [(t, t.gold) for t in ap])):
        sc, secs = _timed(with_checker(strict, "paper"), [t for t, _ in items],
                          [fmt.format(d=t.meta["domain"], c=c) for t, c in items], w)
        n = max(len(sc), 1)
        print(f"{name + ', authors checker':<40} {len(sc):>5}  right {sum(s.correct for s in sc) / n:7.2%} "
              f"(strict {sum(bool(s.detail.get('strict_correct', s.correct)) for s in sc) / n:7.2%})  hallucination "
              f"{sum(bool(s.detail.get('hallucination')) for s in sc) / n:7.2%}  {len(sc) / max(secs, 1e-9):9.1f} items/s")


# ------------------------------------------------------------------------------ stated values, echoes and answer forms

def audit_answer_forms(data_dir, w):
    """The stated-value, echo and answer-form kinds (docs/tasks.md) on the real gold sets and the rules tickets."""
    from janus_memory.tasks import get_family, load_split
    from janus_memory.tasks.rules import generate
    from janus_memory.values import ChatResult
    g = [t for t in load_split("gsm8k", "all", data_dir=data_dir).tasks if t.gold.lstrip("-").isdigit()]
    fam = get_family("gsm8k")
    _kind_row("GSM8K 'Answer: approximately N'", fam, g, [f"Answer: approximately {t.gold}" for t in g], w,
              status="unparsed")
    _kind_row("GSM8K 'Answer: N, give or take'", fam, g, [f"Answer: {t.gold}, give or take" for t in g], w,
              status="unparsed")
    _kind_row("GSM8K 'The final answer is N, i.e., N items.'", fam, g,
              [f"The final answer is {t.gold}, i.e., {t.gold} items." for t in g], w)
    big = [t for t in g if int(t.gold) >= 1000 and int(t.gold) % 1000 == 0]
    _kind_row("GSM8K 'The answer is N/1000 thousand.'", fam, big,
              [f"The answer is {int(t.gold) // 1000} thousand." for t in big], w)
    _kind_row("GSM8K cut after 'Answer: N' (length)", fam, g,
              [ChatResult(text=f"So the total is clear.\nAnswer: {t.gold}", finish_reason="length") for t in g], w,
              status="truncated")
    tasks = load_split("mmlu_pro_eng", "all", data_dir=data_dir).tasks + \
        load_split("mmlu_pro_phy", "all", data_dir=data_dir).tasks
    mc = get_family("mmlu_pro_eng")

    def labels(t):
        return t.meta.get("labels") or "ABCDEFGHIJ"[:len(t.meta["options"])]
    other = {t.id: labels(t)[(labels(t).index(t.gold) + 1) % len(labels(t))] for t in tasks}
    _kind_row("MMLU-Pro '{\"answer\": \"X\"}'", mc, tasks, [f'{{"answer": "{t.gold}"}}' for t in tasks], w)
    _kind_row("MMLU-Pro '..., which is option X.'", mc, tasks,
              [f"That gives the value above, which is option {t.gold}." for t in tasks], w)
    _kind_row("MMLU-Pro '## Final Answer' then 'X. text'", mc, tasks,
              [f"## Final Answer\n{t.gold}. {t.meta['options'][labels(t).index(t.gold)]}" for t in tasks], w)
    _kind_row("MMLU-Pro echoed options list", mc, tasks,
              ["The options are:\n" + "\n".join(f"({x}) {o}" for x, o in zip(labels(t), t.meta["options"]))
               for t in tasks], w, expect=False)
    _kind_row("MMLU-Pro '<answer>X, Y</answer>'", mc, tasks,
              [f"<answer>{min(t.gold, other[t.id])}, {max(t.gold, other[t.id])}</answer>" for t in tasks], w,
              expect=False)
    _kind_row("MMLU-Pro 'likely (Y), though (X) is also possible'", mc, tasks,
              [f"It is likely ({other[t.id]}), though ({t.gold}) is also possible." for t in tasks], w, expect=False)
    rf = get_family("rules")
    rules = [t for seed in range(3) for t in generate("rules", seed)[1]]
    _kind_row("rules test tickets 'Answer: N, give or take'", rf, rules, [f"Answer: {t.gold}, give or take" for t in rules],
              w, status="unparsed")
    _kind_row("rules test tickets, '=' in the justification", rf, rules,
              [f"Answer: {t.gold}, because 2 x 3 = 6 is the other part" for t in rules], w)
    _kind_row("rules test tickets echoed back", rf, rules, [t.question for t in rules], w, expect=False)
    _kind_row("rules test tickets cut while re-checking", rf, rules,
              [ChatResult(text=f"Answer: {t.gold}\nWait, let me re-check the rule:", finish_reason="length")
               for t in rules], w, status="truncated")
    sp = load_split("apibench_hf", "all", data_dir=data_dir)
    api = get_family("apibench_hf")
    fmt = "<<<domain>>>: {d}\n<<<api_call>>>: {c}\n<<<api_provider>>>: Hugging Face\n<<<explanation>>>: x"
    _kind_row("APIBench-HF gold, fields without markers", api, sp.tasks,
              [f"domain: {t.meta['domain']}\napi_call: {t.gold}\napi_provider: Hugging Face" for t in sp.tasks], w)
    gen = [(t, _generic(t.gold)) for t in sp.tasks]
    gen = [(t, c) for t, c in gen if c]
    _kind_row("APIBench-HF gold by its generic loader", api, [t for t, _ in gen],
              [fmt.format(d=t.meta["domain"], c=c) for t, c in gen], w)
    chain = [t for t in sp.tasks if ".from_pretrained(" in t.gold and _parses(t.gold.rstrip(".; "))]
    _kind_row("APIBench-HF gold + a made-up chained method", api, chain,
              [fmt.format(d=t.meta["domain"], c=t.gold.rstrip(".; ") + ".summon_weights()") for t in chain], w,
              expect=False)


def _parses(call: str) -> bool:
    """True when the gold call is one Python expression as written (not a call followed by prose)."""
    import ast
    try:
        return isinstance(ast.parse(call).body[0], ast.Expr) and len(ast.parse(call).body) == 1
    except SyntaxError:
        return False


def _generic(call: str) -> str | None:
    """The gold call with its class written as its generic loader (``StableDiffusionPipeline`` -> ``DiffusionPipeline``,
    ``BertForTokenClassification`` -> ``AutoModelForTokenClassification``), or None."""
    m = re.match(r"""^(\w+)\.from_pretrained\((?=['"])""", call.strip())  # a quoted model id (not a variable)
    if not m:
        return None
    cls = m.group(1)
    if cls.endswith("Pipeline") and cls not in ("Pipeline", "DiffusionPipeline", "TuneAVideoPipeline"):
        new = "DiffusionPipeline"
    elif re.fullmatch(r"[A-Z]\w*For(SequenceClassification|TokenClassification|ImageClassification|CausalLM|MaskedLM"
                      r"|ObjectDetection|SemanticSegmentation|DepthEstimation|VideoClassification|CTC)", cls) \
            and not cls.startswith(("Auto", "TF")):
        new = "AutoModelFor" + cls.split("For", 1)[1]
    else:
        return None
    return new + call.strip()[len(cls):]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--skip-humaneval", action="store_true")
    a = ap.parse_args()
    import logging
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)
    from janus_memory.tasks.data import resolve_data_dir
    from janus_memory.tasks.sandbox import choose_backend
    d = str(resolve_data_dir(a.data_dir))
    print(f"cores={os.cpu_count()} workers={a.workers} python={sys.version.split()[0]} sandbox={choose_backend('auto')}")
    try:
        from janus_memory.tasks.sandbox import sandbox_python
        print(f"python in the sandbox: {sandbox_python()}")
    except ImportError:
        print("python in the sandbox: not probed (sandbox_python is missing in this version)")
    audit_dc(d, a.workers)
    audit_math(d, a.workers)
    audit_mc(d, a.workers)
    if not a.skip_humaneval:
        audit_humaneval(d, a.workers)
    audit_apibench(d, a.workers)
    audit_kinds(d, a.workers, a.skip_humaneval)
    audit_answer_forms(d, a.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
