"""APIBench-HF family (Gorilla, Patil et al.): loader, prompt, ``<<<api_call>>>`` extraction and AST matching.

Sources: shared/data/apibench/huggingface_eval.jsonl (911 questions with gold ``api_call`` and ``api_data``) and
huggingface_api.jsonl (936 API-doc records = the API database). Scoring follows the Gorilla AST evaluator as the paper's
code uses it (paper-spec section 6.2), re-implemented with Python's ``ast`` instead of tree-sitter:
- take the text after the last ``<<<api_call>>>:`` up to the next ``<<<`` field (no field -> unparsed, C18); Markdown
  emphasis around the markers (``**<<<api_call>>>**:``, ``**<<<api_call>>>:**``) and list bullets are tolerated;
- parse it (with small repairs for what tree-sitter tolerates: a trailing period, wrapping quotes, trailing prose after
  the call, an unquoted ``org/model`` argument); every ``ast.Call`` in it is a candidate;
- a database entry matches a candidate when the dotted function names agree (the candidate may add a module prefix),
  every literal argument value of the entry appears among the candidate's literal argument values, and - when the
  candidate names a model or repository (``model=``, ``repo_id=``, ... or the first positional argument; the second
  for ``pipeline``) - the entry names that same identifier. So ``pipeline('text-generation', model='no/such')`` does
  not match the entry ``pipeline('text-generation')`` (issue 11: Gorilla's intent is function + model identifier);
- a model/repo identifier, passed to a database function, that no database entry names is a hallucination, even if
  another call in the same reply matches; an identifier passed through a variable (``model_id = '...';
  X.from_pretrained(model_id)``) is resolved first - constant f-strings, ``+`` of constants and walrus values are
  folded with ``ast`` (never evaluated) - and an identifier argument that cannot be folded (``ids[0]``,
  ``os.getenv(...)``, ``'/'.join(...)``, ``*args``/``**kwargs``, a loop variable or parameter) is UNRESOLVED: never a
  database match, flagged as unknown; ``tokenizer=`` and the other EXTRA_ID_KEYWORDS strings must be in the pool too
  (round 3); one written in its 2024 spelling (``FacebookAI/roberta-base``,
  see RENAMED_2024) is read as the database's (``roberta-base``);
- correct iff some matching entry has the gold question's domain; hallucination iff no entry matches at all.
Text that is not Python (shell commands such as ``mlagents-load-from-hf ...``) matches an entry only by identical
whitespace-normalised text. Unparseable text -> correct=False, hallucination=False, status "unparsed".
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from janus_memory.types import ChatResult, Score, Task

from .base import TaskFamily, output_text
from .data import ENV_DATA_DIR, read_jsonl, require_file, resolve_data_dir, shuffled_slice

HF_DOMAINS = (
    "Multimodal Feature Extraction, Multimodal Text-to-Image, Multimodal Image-to-Text, Multimodal Text-to-Video, "
    "Multimodal Visual Question Answering, Multimodal Document Question Answer, Multimodal Graph Machine Learning, "
    "Computer Vision Depth Estimation, Computer Vision Image Classification, Computer Vision Object Detection, "
    "Computer Vision Image Segmentation, Computer Vision Image-to-Image, Computer Vision Unconditional Image Generation, "
    "Computer Vision Video Classification, Computer Vision Zero-Shot Image Classification, "
    "Natural Language Processing Text Classification, Natural Language Processing Token Classification, "
    "Natural Language Processing Table Question Answering, Natural Language Processing Question Answering, "
    "Natural Language Processing Zero-Shot Classification, Natural Language Processing Translation, "
    "Natural Language Processing Summarization, Natural Language Processing Conversational, "
    "Natural Language Processing Text Generation, Natural Language Processing Fill-Mask, "
    "Natural Language Processing Text2Text Generation, Natural Language Processing Sentence Similarity, "
    "Natural Language Processing Feature Extraction, Audio Text-to-Speech, Audio Automatic Speech Recognition, "
    "Audio Audio-to-Audio, Audio Audio Classification, Audio Voice Activity Detection, Tabular Tabular Classification, "
    "Tabular Tabular Regression, Reinforcement Learning, Reinforcement Learning Robotics")


def _api_dir(data_dir) -> Path:
    return resolve_data_dir(data_dir) / "apibench"


def _fix() -> str:
    return f"pass --data-dir or set {ENV_DATA_DIR} to a folder containing apibench/huggingface_eval.jsonl"


def _instruction(code: str) -> str:
    m = re.search(r"###Instruction:\s*(.*?)\s*###Output", code, re.S)
    return (m.group(1) if m else code).strip()


def load_apibench_hf(split: str, *, data_dir=None, seed: int = 0):
    d = _api_dir(data_dir)
    p = require_file(d / "huggingface_eval.jsonl", "APIBench huggingface_eval.jsonl", _fix())
    tasks = [Task(id=f"apibench_hf:{i + 1}", dataset="apibench_hf", question=_instruction(r["code"]), gold=r["api_call"],
                  meta={"domain": r["api_data"]["domain"], "api_name": r["api_data"].get("api_name", ""),
                        "provider": r.get("provider", "")})
             for i, r in enumerate(read_jsonl(p))]
    if split == "all":
        return tasks, [p], "all 911 in file order"
    chosen, rule = shuffled_slice(tasks, f"apibench_hf:{seed}", split, 250, 500)
    return chosen, [p], rule


# ---------------------------------------------------------------------------------------------- AST matching

@dataclass(frozen=True)
class CallSig:
    """One call: dotted function name, all literal argument values, and its model/repo identifiers (see ``_ids``)."""

    name: str
    values: frozenset
    ids: frozenset = frozenset()
    extra: frozenset = frozenset()  # further repository ids (tokenizer=..., see EXTRA_ID_KEYWORDS)


# keyword arguments that name a model or repository; other calls take it as their first positional argument
ID_KEYWORDS = {"model", "repo_id", "repo", "source", "model_name", "model_id", "model_tag", "checkpoint",
               "pretrained_model_name_or_path", "model_name_or_path"}
_TASK_FIRST = {"pipeline"}  # pipeline(task, model): the identifier is the second positional argument


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# Hugging Face moved its org-less "canonical" models into organisations in 2024 (the old names still redirect), so a
# model written today as ``FacebookAI/roberta-base`` is the database's ``roberta-base``. Explicit table, new -> old:
# organisation (lower case) -> the org-less names it took over (a name ending in "-" is a prefix of a family).
RENAMED_2024: dict[str, tuple[str, ...]] = {
    "google-bert": ("bert-",),
    "facebookai": ("roberta-base", "roberta-large", "roberta-large-mnli", "xlm-"),
    "openai-community": ("gpt2", "gpt2-", "openai-gpt", "roberta-base-openai-detector",
                         "roberta-large-openai-detector"),
    "distilbert": ("distilbert-", "distilgpt2", "distilroberta-"),
    "google-t5": ("t5-",),
    "albert": ("albert-",),
    "xlnet": ("xlnet-",),
    "almanach": ("camembert-",),
    "salesforce": ("ctrl",),
    "transfo-xl": ("transfo-xl-",),
}
# whole-id moves of 2024: runwayml removed its Stable Diffusion repositories; the community mirror kept the names
RENAMED_REPOS_2024: dict[str, str] = {
    "stable-diffusion-v1-5/stable-diffusion-v1-5": "runwayml/stable-diffusion-v1-5",
    "stable-diffusion-v1-5/stable-diffusion-inpainting": "runwayml/stable-diffusion-inpainting",
}


def canonical_id(i: str) -> str:
    """The database spelling of a model/repo identifier renamed in 2024 (see RENAMED_2024), else ``i`` unchanged."""
    if i in RENAMED_REPOS_2024:
        return RENAMED_REPOS_2024[i]
    org, sep, name = i.partition("/")
    if not sep or "/" in name:
        return i
    for old in RENAMED_2024.get(org.lower(), ()):
        prefix = old.endswith("-")
        if (name == old and not prefix) or (prefix and name.startswith(old) and len(name) > len(old)):
            return name
    return i


def _slashed(node) -> bool:
    """An unquoted ``org/model-name`` (parsed by Python as divisions and subtractions of names and numbers:
    ``runwayml/stable-diffusion-v1-5`` is ``((runwayml / stable) - diffusion) - v1) - 5``)."""
    def leaves_ok(n):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.Sub)):
            return leaves_ok(n.left) and leaves_ok(n.right)
        return isinstance(n, (ast.Name, ast.Attribute)) or (isinstance(n, ast.Constant)
                                                            and isinstance(n.value, (int, float)))
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Sub)) and leaves_ok(node)):
        return False
    return sum(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) for n in ast.walk(node)) == 1


UNRESOLVED = "<unresolved id>"  # an identifier argument that is not a constant the scorer can fold: never a match
_OBJ = object()  # a variable bound to a loaded model/pipeline object (``model = X.from_pretrained(...)``), not an id
# functions whose first positional argument (pipeline: second) names the model/repository
ID_FUNCS = {"from_pretrained", "from_pretrained_keras", "load_from_hub", "hf_hub_download", "snapshot_download",
            "SentenceTransformer", "CrossEncoder", "from_hparams", "load_model_ensemble_and_task_from_hf_hub",
            "pipeline"}
_LOADERS = {"load", "cached_download", "from_config", "from_hparams"}
# keyword arguments that name a further repository (tokenizer, processor, ...): when given as a string it must be in
# the database's pool of identifiers, but the matching entry need not name it
EXTRA_ID_KEYWORDS = {"tokenizer", "feature_extractor", "image_processor", "processor", "tokenizer_name",
                     "config_name", "revision_repo"}


def _fold(node, env: dict | None = None):
    """The string an expression certainly evaluates to, folded with ``ast`` only (nothing is evaluated): a constant,
    an f-string of foldable parts, ``+`` of foldable strings, a walrus, or a variable bound to one of those (``env``).
    Returns ``_OBJ`` for a variable bound to a loaded model object and None when it cannot be folded."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and env is not None and node.id in env:
        return env[node.id]
    if isinstance(node, ast.NamedExpr):
        return _fold(node.value, env)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _fold(node.left, env), _fold(node.right, env)
        return a + b if isinstance(a, str) and isinstance(b, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                if v.conversion not in (-1, 115) or v.format_spec is not None:  # only {x} and {x!s}
                    return None
                v = v.value
            f = _fold(v, env)
            if not isinstance(f, str):
                return None
            parts.append(f)
        return "".join(parts)
    return None


def _lit(node, env: dict | None = None) -> str | None:
    """A literal argument value: a foldable string (see ``_fold``), a number, or an unquoted ``org/name``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return str(node.value)
    if _slashed(node):
        return canonical_id(ast.unparse(node).replace(" ", ""))
    f = _fold(node, env)
    return canonical_id(f) if isinstance(f, str) else None


def _loads(node) -> bool:
    """True when an expression calls a loader (``X.from_pretrained('org/m')``, ``cached_download(url)``, ...): its
    value is a model object or a file whose own identifier is checked where the loader is called."""
    for c in ast.walk(node):
        last = (_dotted(c.func) or "").split(".")[-1] if isinstance(c, ast.Call) else ""
        if last in ID_FUNCS or last in _LOADERS or last.endswith("from_pretrained"):
            return True
    return False


def _id_arg(node, env: dict | None) -> str | None:
    """An identifier argument: its folded value, None for a loaded model object, UNRESOLVED for anything else
    (a subscript, a call such as ``os.getenv(...)`` or ``'/'.join(...)``, a starred list, an unbound name, ...)."""
    if _slashed(node):
        return _lit(node, env)
    f = _fold(node, env)
    if f is _OBJ or (f is None and _loads(node)):
        return None
    return canonical_id(f) if isinstance(f, str) else UNRESOLVED


def _ids(node: ast.Call, name: str, env: dict | None = None) -> frozenset:
    """The model/repo identifiers a call names: ID_KEYWORDS values, else the first (pipeline: second) positional
    argument. In a call of an ID_FUNCS function (or an ID_KEYWORDS value anywhere) an identifier that cannot be folded
    to a constant - or one hidden in ``*args`` / ``**kwargs`` - is UNRESOLVED; elsewhere only literals count."""
    last = name.split(".")[-1]
    id_func = last in ID_FUNCS or last.endswith("from_pretrained")
    ids = [_id_arg(k.value, env) for k in node.keywords if k.arg in ID_KEYWORDS]
    pos = 1 if last in _TASK_FIRST else 0
    if not any(k.arg in ID_KEYWORDS for k in node.keywords):
        if id_func and any(isinstance(a, ast.Starred) for a in node.args[:pos + 1]):
            ids.append(UNRESOLVED)
        elif len(node.args) > pos:
            ids.append(_id_arg(node.args[pos], env) if id_func else _lit(node.args[pos], env))
        elif id_func and any(k.arg is None for k in node.keywords):
            ids.append(UNRESOLVED)  # X.from_pretrained(**{'pretrained_model_name_or_path': ...})
    return frozenset(i for i in ids if i)


def _extra_ids(node: ast.Call, env: dict | None = None) -> frozenset:
    """Identifiers of EXTRA_ID_KEYWORDS given as (foldable) strings: ``pipeline(..., tokenizer='org/tok')``."""
    vals = [_fold(k.value, env) for k in node.keywords if k.arg in EXTRA_ID_KEYWORDS]
    return frozenset(canonical_id(v) for v in vals if isinstance(v, str))


def _bindings(tree) -> dict:
    """Variables assigned a foldable string (``model_id = 'org/name'``, ``org = 'x'; m = f'{org}/y'``), the last
    assignment in source order winning: the diffusers idiom ``model_id = '...'; X.from_pretrained(model_id)`` names
    its model through one (issue 26). A variable bound to an expression that loads a model is ``_OBJ``; any other
    binding (a tuple target, a loop variable, a parameter) leaves the name unbound, so it is not resolved."""
    env: dict = {}
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    for n in sorted(assigns, key=lambda n: (n.lineno, n.col_offset)):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        val = _fold(n.value, env)
        if val is None and _loads(n.value):
            val = _OBJ
        for t in targets:
            if isinstance(t, ast.Name):
                if val is None:
                    env.pop(t.id, None)
                else:
                    env[t.id] = val if val is _OBJ else canonical_id(val)
            else:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Name):
                        env.pop(sub.id, None)
    return env


def _calls(tree) -> list[CallSig]:
    out = []
    env = _bindings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name is None:
                continue
            # values and identifiers of the whole call subtree (nested calls included), as Gorilla's matcher reads
            # the candidate subtree's text
            vals, ids, extra = [], set(), set()
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    vals += [_lit(a, env) for a in sub.args] + [_lit(k.value, env) for k in sub.keywords]
                    sub_name = _dotted(sub.func)
                    ids |= _ids(sub, sub_name, env) if sub_name else set()
                    extra |= _extra_ids(sub, env)
            out.append(CallSig(name, frozenset(v for v in vals if v is not None), frozenset(ids), frozenset(extra)))
    return out


def _first_call_prefix(s: str) -> str | None:
    i = s.find("(")
    if i < 0:
        return None
    depth, q = 0, None
    for j in range(i, len(s)):
        c = s[j]
        if q:
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return s[:j + 1]
    return None


def parse_api_call(src: str) -> list[CallSig] | None:
    """Candidate calls in an api_call string (with the repairs listed in the module docstring); None if unparseable."""
    s = (src or "").strip().strip("`").strip()
    if not s:
        return None
    tries = [s]
    t = re.sub(r"[.;]+$", "", s).strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"" and "(" in t:
        t = t[1:-1]
    tries.append(t)
    pre = _first_call_prefix(t)
    if pre:
        tries.append(pre)
    tries += [re.sub(r"(?<=[=(,])\s*([A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+)(?=\s*[,)])", r"'\1'", x) for x in list(tries)]
    for x in tries:
        try:
            calls = _calls(ast.parse(x))
        except (SyntaxError, ValueError):
            continue
        if calls:
            return calls
    return None


def _norm_text(s: str) -> str:
    return re.sub(r"\s+", " ", (s or "").strip().rstrip(".").strip())


@dataclass(frozen=True)
class _Entry:
    sig: CallSig | None
    raw: str
    domain: str
    api_name: str


class APIDatabase:
    """The API database (huggingface_api.jsonl + the eval file's api_data records) indexed by the last segment of the function name."""

    def __init__(self, records: list[dict]):
        self.by_last: dict[str, list[_Entry]] = {}
        self.by_text: dict[str, list[_Entry]] = {}
        self.known_ids: set[str] = set()
        self.known_funcs: set[str] = set()
        for r in records:
            raw = r.get("api_call") or ""
            sigs = parse_api_call(raw)
            sig = sigs[0] if sigs else None
            e = _Entry(sig, raw, r.get("domain", ""), r.get("api_name", ""))
            self.by_text.setdefault(_norm_text(raw), []).append(e)
            for c in sigs or []:
                self.known_ids |= (c.ids | c.extra) - {UNRESOLVED}
                self.known_funcs.add(c.name.split(".")[-1])
            if sig:
                self.by_last.setdefault(sig.name.split(".")[-1], []).append(e)

    @staticmethod
    def _entry_matches(c: CallSig, e: _Entry) -> bool:
        n = e.sig.name
        if not (c.name == n or c.name.endswith("." + n)):
            return False
        if c.ids and not c.ids <= e.sig.ids:  # the call names a model/repo: the entry must name that same one
            return False
        # every literal argument of the entry appears in the call (an entry without literals matches only a call
        # without literals)
        return bool(e.sig.values and e.sig.values <= c.values) or (not e.sig.values and not c.values)

    def unknown_ids(self, calls: list[CallSig]) -> list[str]:
        """Identifiers named by calls to database functions that no database entry names (hallucinated models)."""
        return sorted({i for c in calls if c.name.split(".")[-1] in self.known_funcs for i in c.ids | c.extra
                       if i not in self.known_ids})

    def matches(self, api_call: str) -> tuple[list[_Entry], bool, list[str]]:
        """(matching entries, parsed?, unknown model identifiers)."""
        calls = parse_api_call(api_call)
        text_hits = self.by_text.get(_norm_text(api_call), [])
        if calls is None:
            return list(text_hits), bool(text_hits), []
        hits = [e for c in calls for e in self.by_last.get(c.name.split(".")[-1], []) if self._entry_matches(c, e)]
        unknown = [] if text_hits else self.unknown_ids(calls)
        return hits + [e for e in text_hits if e not in hits], True, unknown


@lru_cache(maxsize=4)
def load_api_database(api_path: str, eval_path: str | None = None) -> APIDatabase:
    """Database = huggingface_api.jsonl records plus the ``api_data`` records of huggingface_eval.jsonl.

    The eval file carries its own API-doc record per question; in 3 of 911 questions it differs from the API file
    (e.g. a truncated model name there), so without it those gold calls could never match.
    """
    recs = read_jsonl(api_path)
    if eval_path:
        seen = {(r.get("api_call"), r.get("domain")) for r in recs}
        for r in read_jsonl(eval_path):
            a = r.get("api_data") or {}
            if (a.get("api_call"), a.get("domain")) not in seen:
                seen.add((a.get("api_call"), a.get("domain")))
                recs.append(a)
    return APIDatabase(recs)


_MD = r"(?:\*{1,2}|_{1,2})?"  # Markdown emphasis around a field marker: **<<<api_call>>>**: / **<<<api_call>>>:**
_FIELD = re.compile(rf"<<<\s*api_call\s*>>>\s*{_MD}\s*:?\s*{_MD}\s*(.*?)(?={_MD}\s*<<<|\Z)", re.S | re.I)


def extract_api_call(text: str) -> str | None:
    """Text of the last ``<<<api_call>>>:`` field (up to the next ``<<<`` field), or None if absent/empty (C18)."""
    found = [m.group(1).strip() for m in _FIELD.finditer(text or "")]
    found = [f for f in found if f]
    if not found:
        return None
    s = re.sub(r"(?:\s|\n[ \t]*(?:[-*+•]|#+))+$", "", found[-1])  # the next field's list bullet or heading mark
    m = re.match(r"^```(?:python)?\s*(.*?)\s*```$", s, re.S)
    return (m.group(1) if m else s).strip()


class APIBenchFamily(TaskFamily):
    """APIBench-HF: Gorilla field-format prompt; accuracy and hallucination per the AST matcher above."""

    name = "apibench"
    prompt_name = "apibench_hf"

    def fake_answer(self, task: Task, right: bool) -> str:  # scripted fake backend: the reference call, or a bogus one
        meta = task.meta or {}
        if "api_name" not in meta or not isinstance(task.gold, str):
            return super().fake_answer(task, right)
        call = task.gold if right else "pipeline('no-such-task', model='no/such-model')"
        return (f"<<<domain>>>: {meta.get('domain', '')}\n<<<api_call>>>: {call}\n"
                f"<<<api_provider>>>: {meta.get('provider', 'Hugging Face Transformers')}\n<<<explanation>>>: scripted")

    def __init__(self, *, faithful: bool = False, data_dir=None):
        super().__init__(faithful=faithful)
        self._data_dir = data_dir

    @property
    def database(self) -> APIDatabase:
        d = _api_dir(self._data_dir)
        p = require_file(d / "huggingface_api.jsonl", "APIBench huggingface_api.jsonl", _fix())
        e = d / "huggingface_eval.jsonl"
        return load_api_database(str(p), str(e) if e.is_file() else None)

    def prompt(self, task: Task) -> str:
        return self._template.substitute(question=task.question, domains=HF_DOMAINS)

    def extract(self, text: str) -> str | None:
        return extract_api_call(text)

    def score(self, task: Task, output: ChatResult | str) -> Score:
        text, truncated = output_text(output)
        call = extract_api_call(text)
        if truncated and call is not None and not re.search(r"<<<\s*api_call\s*>>>.*<<<", text, re.S | re.I):
            call = None  # cut off inside the api_call field: no complete answer
        if call is None:
            return Score(False, None, "truncated" if truncated else "unparsed",
                         {"hallucination": False, "unparsed": True})
        hits, parsed, unknown = self.database.matches(call)
        if not parsed:
            return Score(False, call, "unparsed", {"hallucination": False, "unparsed": True})
        if unknown:  # a model/repo found nowhere in the database is a hallucination, whatever else matched
            hits = []
        correct = any(e.domain == task.meta["domain"] for e in hits)
        return Score(correct, call, "ok", {"hallucination": not hits, "unparsed": False, "unknown_ids": unknown,
                                           "matched": [e.api_name for e in hits[:3]]})


def apibench_summary(scores) -> dict:
    """Accuracy, hallucination rate and unparsed rate of APIBench scores."""
    scores = list(scores)
    n = len(scores) or 1
    return {"n": len(scores), "accuracy": sum(s.correct for s in scores) / n,
            "hallucination_rate": sum(bool(s.detail.get("hallucination")) for s in scores) / n,
            "unparsed_rate": sum(s.status in ("unparsed", "truncated") for s in scores) / n}
