"""APIBench-HF family (Gorilla, Patil et al.): loader, prompt, ``<<<api_call>>>`` extraction and AST matching.

Sources (the data folder of tasks/data.py): apibench/huggingface_eval.jsonl (911 questions with gold ``api_call`` and
``api_data``) and huggingface_api.jsonl (936 API-doc records = the API database). Scoring follows the Gorilla AST
evaluator as the paper's code uses it (docs/research-notes.md §6.2), re-implemented with Python's ``ast`` instead of
tree-sitter:
- take the text after the last ``<<<api_call>>>:`` up to the next ``<<<`` field (no field -> unparsed, C18); Markdown
  emphasis around the markers (``**<<<api_call>>>**:``, ``**<<<api_call>>>:**``) and list bullets are tolerated;
- parse it (with small repairs for what tree-sitter tolerates: a trailing period, wrapping quotes, trailing prose after
  the call, an unquoted ``org/model`` argument); every ``ast.Call`` in it is a candidate;
- a database entry matches a candidate when the dotted function names agree (the candidate may add a module prefix),
  every literal argument value of the entry appears among the candidate's literal argument values, and - when the
  candidate names a model or repository (``model=``, ``repo_id=``, ... or the first positional argument; the second
  for ``pipeline``) - the entry names that same identifier. So ``pipeline('text-generation', model='no/such')`` does
  not match the entry ``pipeline('text-generation')`` (Gorilla's intent is function + model identifier);
- a model/repo identifier, passed to a database function, that no database entry names is a hallucination, even if
  another call in the same reply matches; an identifier passed through a variable (``model_id = '...';
  X.from_pretrained(model_id)``) is resolved first - constant f-strings, ``+`` of constants and walrus values are
  folded with ``ast`` (never evaluated) - and an identifier argument that cannot be folded (``ids[0]``,
  ``os.getenv(...)``, ``'/'.join(...)``, ``*args``/``**kwargs``, a loop variable or parameter) is UNRESOLVED: never a
  database match, flagged as unknown; ``tokenizer=`` and the other EXTRA_ID_KEYWORDS strings must be in the pool too;
  one written in its 2024 spelling (``FacebookAI/roberta-base``,
  see RENAMED_2024) is read as the database's (``roberta-base``);
- correct iff some matching entry has the gold question's domain; hallucination iff no entry matches at all.
Spellings a library resolves itself are read as the database's (apibench_match.library_id): sentence-transformers
names without their organisation, timm's ``hf_hub:`` prefix, the pipeline task aliases transformers accepts.
Shell commands (``mlagents-load-from-hf ...``, ``./run.sh ...``) are compared as commands (``shlex``): the same
program, every option of the entry with its value (``--repo-id='x'``, ``--repo-id "x"`` and ``--repo-id=x`` are one),
the same positional arguments; a ```bash fence, a ``$``/``!`` prompt and other quoting do not matter. A command of a
database program that matches no entry is a hallucination. Other unparseable text -> correct=False,
hallucination=False, status "unparsed".

The authors' checker (``checker: paper``): :meth:`APIBenchFamily.paper_check` re-states the evaluator of the Janus
authors' code (a port of Gorilla's ``ast_eval_hf``): the text after the first "api_call" up to "api_provider", from its
first ":" to its last ")"; the first pool entry (``huggingface_api.jsonl`` order) with the same dotted function name
whose every argument text appears in the first candidate call of that name; correct iff that entry's domain is the
gold domain; no entry, no call or a syntax error is a hallucination. Their verdict is kept, except that a reply
whose every model identifier is a real one of the database is never called a hallucination.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from janus_memory.values import ChatResult, Score, Task

from .apibench_match import (  # noqa: F401 (re-exported)
    RENAMED_2024,
    UNRESOLVED,
    CallSig,
    canonical_id,
    chained_methods,
    generic_covers,
    is_generic,
    parse_api_call,
)
from .base import TaskFamily, output_text
from .data import find_source, read_jsonl, shuffled_slice

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


# methods of what the loaders return that the database's example code need not show: torch.nn.Module's, the
# transformers/diffusers models' and pipelines' own, and sentence-transformers'
COMMON_METHODS = frozenset((
    "to cuda cpu eval train half float double bfloat16 requires_grad_ zero_grad parameters named_parameters "
    "state_dict load_state_dict apply modules children forward generate predict encode decode save_pretrained "
    "push_to_hub from_pretrained resize_token_embeddings get_input_embeddings get_output_embeddings tie_weights "
    "num_parameters enable_model_cpu_offload enable_sequential_cpu_offload enable_xformers_memory_efficient_attention "
    "enable_attention_slicing disable_attention_slicing enable_vae_slicing enable_vae_tiling set_progress_bar_config "
    "fuse_lora unfuse_lora load_lora_weights set_adapters enable_gradient_checkpointing gradient_checkpointing_enable "
    "batch_decode tokenize convert_ids_to_tokens convert_tokens_to_ids pad post_process similarity "
    "encode_multi_process save load predict_proba transform fit score").split())


def _api_file(data_dir, name: str) -> Path:
    """``apibench/<name>`` of the data folder (tasks/data.py: --data-dir, JANUS_DATA_DIR, else the shipped copy)."""
    return find_source(data_dir, f"apibench/{name}", f"APIBench {name}")


def _instruction(code: str) -> str:
    m = re.search(r"###Instruction:\s*(.*?)\s*###Output", code, re.S)
    return (m.group(1) if m else code).strip()


# the APIBench-HF split and question (run settings ``apibench_split`` / ``apibench_question``): "paper" keys the stable
# shuffle as the authors' task_apibench.py does, "registry" by our dataset name; "code" is the row's whole code field
# as the authors' prompt and retrieval query use it (the instruction AND the reference output: domain, api_call,
# provider, explanation, code), "instruction" the instruction alone
APIBENCH_SPLITS = {"paper": "APIBench:hf:{seed}", "registry": "apibench_hf:{seed}"}
APIBENCH_QUESTIONS = ("code", "instruction")


def load_apibench_hf(split: str, *, data_dir=None, seed: int = 0, apibench_split: str = "registry",
                     apibench_question: str = "instruction"):
    """APIBench-HF: the 911 rows of huggingface_eval.jsonl, ids ``apibench_hf:<1-based row>``; stream = [0:250) and
    test = [250:500) of a stable shuffle keyed by ``APIBENCH_SPLITS[apibench_split]``; the question is the row's
    ``code`` field stripped (``apibench_question="code"``) or the text between "###Instruction:" and "###Output"."""
    if apibench_split not in APIBENCH_SPLITS:
        raise ValueError(f"apibench_split must be one of {tuple(APIBENCH_SPLITS)}, got {apibench_split!r}")
    if apibench_question not in APIBENCH_QUESTIONS:
        raise ValueError(f"apibench_question must be one of {APIBENCH_QUESTIONS}, got {apibench_question!r}")
    p = _api_file(data_dir, "huggingface_eval.jsonl")
    question = (lambda code: code.strip()) if apibench_question == "code" else _instruction
    tasks = [Task(id=f"apibench_hf:{i + 1}", dataset="apibench_hf", question=question(r["code"]), gold=r["api_call"],
                  meta={"domain": r["api_data"]["domain"], "api_name": r["api_data"].get("api_name", ""),
                        "provider": r.get("provider", "")})
             for i, r in enumerate(read_jsonl(p))]
    if split == "all":
        return tasks, [p], "all 911 in file order"
    chosen, rule = shuffled_slice(tasks, APIBENCH_SPLITS[apibench_split].format(seed=seed), split, 250, 500)
    return chosen, [p], rule


# ------------------------------------------------------------------- the API database (AST matching: apibench_match.py)


def _norm_text(s: str) -> str:
    return re.sub(r"\s+", " ", (s or "").strip().rstrip(".").strip())


@dataclass(frozen=True)
class _Entry:
    sig: CallSig | None
    raw: str
    domain: str
    api_name: str
    libraries: str = ""  # the record's stated requirements and framework, lower case


@dataclass(frozen=True)
class ShellCommand:
    """A shell command: program, (option, value) pairs (a flag alone has value ""), positional arguments."""

    program: str
    options: frozenset
    positional: tuple


def shell_command(text: str) -> ShellCommand | None:
    """``text`` read as one shell command (``shlex``, POSIX quoting), or None when it is not one."""
    s = re.sub(r"^```(?:bash|sh|shell|console|zsh)?\s*|\s*```$", "", (text or "").strip()).strip()
    s = re.sub(r"^(?:\$|!|%)\s*", "", s).rstrip(";").strip()
    if not s or "\n" in s or "(" in s.split()[0]:
        return None
    try:
        toks = shlex.split(s, posix=True)
    except ValueError:
        return None
    if not toks or not re.fullmatch(r"(?:\./)?[\w][\w.\-/]*", toks[0]):
        return None
    opts, pos, i = set(), [], 1
    while i < len(toks):
        t = toks[i]
        if t.startswith("-") and "=" in t:
            opts.add(tuple(t.split("=", 1)))
        elif t.startswith("-") and i + 1 < len(toks) and not toks[i + 1].startswith("-"):
            opts.add((t, toks[i + 1]))
            i += 1
        elif t.startswith("-"):
            opts.add((t, ""))
        else:
            pos.append(t)
        i += 1
    return ShellCommand(toks[0], frozenset(opts), tuple(pos))


def _shell_ids(cmd: ShellCommand) -> set[str]:
    return {v for k, v in cmd.options if "/" in v and not v.startswith(".")} | {p for p in cmd.positional if "/" in p}


class APIDatabase:
    """The API database (huggingface_api.jsonl + the eval file's api_data records) indexed by the last segment of the
    function name."""

    def __init__(self, records: list[dict]):
        self.by_last: dict[str, list[_Entry]] = {}
        self.by_text: dict[str, list[_Entry]] = {}
        self.shell: list[tuple[ShellCommand, _Entry]] = []
        self.known_ids: set[str] = set()
        self.known_funcs: set[str] = set()
        # methods a loaded model or pipeline has: those the database's example code calls, plus torch's nn.Module
        # and the loaders' common ones
        self.known_methods: set[str] = set(COMMON_METHODS)
        for r in records:
            raw = r.get("api_call") or ""
            sigs = parse_api_call(raw)
            sig = sigs[0] if sigs else None
            libs = f"{r.get('python_environment_requirements') or ''} {r.get('framework') or ''}".lower()
            e = _Entry(sig, raw, r.get("domain", ""), r.get("api_name", ""), libs)
            example = r.get("example_code")
            if isinstance(example, str):
                self.known_methods |= set(re.findall(r"\.\s*([A-Za-z_]\w*)\s*\(", example))
            self.by_text.setdefault(_norm_text(raw), []).append(e)
            for c in sigs or []:
                self.known_ids |= (c.ids | c.extra) - {UNRESOLVED}
                self.known_funcs.add(c.name.split(".")[-1])
            if sig:
                self.by_last.setdefault(sig.name.split(".")[-1], []).append(e)
            elif (shell := shell_command(raw)) is not None:
                self.shell.append((shell, e))
                self.known_ids |= _shell_ids(shell)
        self.shell_programs = {c.program for c, _ in self.shell}
        self.known_methods |= self.known_funcs

    @staticmethod
    def _same_function(c: CallSig, e: _Entry) -> bool:
        """The call's function is the entry's (a module prefix allowed), or a generic loader of the same library
        that loads the entry's class (apibench_match.generic_covers: ``DiffusionPipeline.from_pretrained`` for
        ``StableDiffusionPipeline.from_pretrained``)."""
        assert e.sig is not None
        n = e.sig.name
        if c.name == n or c.name.endswith("." + n):
            return True
        cp, np_ = c.name.split("."), n.split(".")
        return (len(cp) >= 2 and len(np_) >= 2 and cp[-1] == np_[-1] and is_generic(cp[-2])
                and generic_covers(cp[-2], np_[-2], e.libraries))

    @staticmethod
    def _entry_matches(c: CallSig, e: _Entry) -> bool:
        assert e.sig is not None  # only entries with a parsed call are indexed by name
        if not APIDatabase._same_function(c, e):
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

    def unknown_methods(self, api_call: str) -> list[str]:
        """Methods called on a loaded model or pipeline that no database example calls and that are not common
        methods of loaded models (``COMMON_METHODS``): made up (``X.from_pretrained('m').summon_weights()``)."""
        return sorted({m for m in chained_methods(api_call) if m not in self.known_methods})

    def shell_matches(self, cmd: ShellCommand) -> list[_Entry]:
        """Entries run by the same program with every one of their options (and values) and the same positionals."""
        return [e for c, e in self.shell if c.program == cmd.program and c.options <= cmd.options
                and c.positional == cmd.positional]

    def real_ids(self, api_call: str) -> bool:
        """True when the call names at least one model identifier and every one it names is in the database."""
        calls = parse_api_call(api_call)
        if calls is None:
            cmd = shell_command(api_call)
            ids = _shell_ids(cmd) if cmd else set()
        else:
            ids = {i for c in calls for i in c.ids | c.extra}
        return bool(ids) and ids <= self.known_ids

    def matches(self, api_call: str) -> tuple[list[_Entry], bool, list[str]]:
        """(matching entries, parsed?, unknown model identifiers)."""
        calls = parse_api_call(api_call)
        text_hits = self.by_text.get(_norm_text(api_call), [])
        if calls is None:
            cmd = shell_command(api_call)
            if cmd is not None and cmd.program in self.shell_programs:
                hits = self.shell_matches(cmd)
                unknown = [] if hits else sorted(_shell_ids(cmd) - self.known_ids)
                return hits + [e for e in text_hits if e not in hits], True, unknown
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
    recs: list[dict] = list(read_jsonl(api_path))
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
# the Gorilla fields written without their markers ("api_call: ...", "**api_call**: ...", "- `api_call`: ..."), as
# Gorilla's own evaluator finds them (it splits the reply at "api_call"); the field ends at the next field name
_FIELD_NAMES = (r"domain|api_call|api_provider|explanation|code|api_arguments|python_environment_requirements"
                r"|example_code|performance|description|functionality|api_name|framework")
_NEXT_BARE = rf"(?:^|\n)[ \t]*(?:[-*+•][ \t]+)?{_MD}`?(?:{_FIELD_NAMES})`?{_MD}[ \t]*{_MD}[ \t]*:"
_BARE_FIELD = re.compile(rf"(?<![<\w])`?api_call`?{_MD}[ \t]*:[ \t]*{_MD}[ \t]*(.*?)(?={_NEXT_BARE}|<<<|\Z)",
                         re.S | re.I)


def _api_fields(text: str) -> list[tuple[str, bool]]:
    """(content, closed by a next field?) of every api_call field in order: the ``<<<api_call>>>`` fields, or when
    there is none, the fields written without their markers."""
    marked = [(m.group(1).strip(), m.end() < len(text)) for m in _FIELD.finditer(text or "")]
    if any(c for c, _ in marked):  # the marked fields govern: "api_call:" inside an explanation is prose
        return [(c, closed) for c, closed in marked if c]
    bare = [(m.group(1).strip(), m.end() < len(text)) for m in _BARE_FIELD.finditer(text or "")]
    return [(c, closed) for c, closed in bare if c]


def _clean_field(s: str) -> str:
    s = re.sub(r"(?:\s|\n[ \t]*(?:[-*+•]|#+))+$", "", s)  # the next field's list bullet or heading mark
    m = re.match(r"^```(?:python|py|python3|bash|sh|shell|console|zsh)?\s*(.*?)\s*```$", s, re.S)
    s = (m.group(1) if m else s).strip()
    m = re.fullmatch(r"`([^`]+)`", s)  # an inline code span
    return (m.group(1) if m else s).strip()


def extract_api_call(text: str) -> str | None:
    """Text of the last api_call field (``<<<api_call>>>:`` up to the next ``<<<`` field, or a bare ``api_call:``
    up to the next field name), or None if absent/empty (C18)."""
    found = _api_fields(text)
    return _clean_field(found[-1][0]) if found else None


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
        p = _api_file(self._data_dir, "huggingface_api.jsonl")
        try:
            e: Path | None = _api_file(self._data_dir, "huggingface_eval.jsonl")
        except FileNotFoundError:
            e = None
        return load_api_database(str(p), str(e) if e is not None else None)

    def prompt(self, task: Task) -> str:
        return self._template.substitute(question=task.question, domains=HF_DOMAINS)

    def paper_check(self, task: Task, text: str, strict: Score) -> tuple[bool, dict]:
        """The authors' verdict on ``text`` (what their checker sees: the output, thinking included; apibench_paper)
        and the detail to record: their hallucination flag, except that a reply whose every model identifier is a
        real one of the database is never a hallucination (our strict flag is kept as ``strict_hallucination``)."""
        from .apibench_paper import authors_verdict, load_pool

        api = _api_file(self._data_dir, "huggingface_api.jsonl")
        correct, hallucinated, reason = authors_verdict(text, (task.meta or {}).get("domain", ""), load_pool(str(api)))
        real = isinstance(strict.extracted, str) and self.database.real_ids(strict.extracted)
        return correct, {"hallucination": hallucinated and not real, "paper_reason": reason,
                         "strict_hallucination": bool((strict.detail or {}).get("hallucination"))}

    def extract(self, text: str) -> str | None:
        return extract_api_call(text)

    def score(self, task: Task, output: ChatResult | str) -> Score:
        text, truncated = output_text(output)
        fields = _api_fields(text)
        call = _clean_field(fields[-1][0]) if fields else None
        if truncated and call is not None and not fields[-1][1]:
            call = None  # cut off inside the api_call field: no complete answer
        if call is None:
            return Score(False, None, "truncated" if truncated else "unparsed",
                         {"hallucination": False, "unparsed": True})
        hits, parsed, unknown = self.database.matches(call)
        if not parsed:
            return Score(False, call, "unparsed", {"hallucination": False, "unparsed": True})
        methods = self.database.unknown_methods(call)
        if unknown or methods:  # a made-up model/repo or method is a hallucination, whatever else matched
            hits = []
        correct = any(e.domain == task.meta["domain"] for e in hits)
        return Score(correct, call, "ok", {"hallucination": not hits, "unparsed": False, "unknown_ids": unknown,
                                           "unknown_methods": methods, "matched": [e.api_name for e in hits[:3]]})


def apibench_summary(scores) -> dict:
    """Accuracy, hallucination rate and unparsed rate of APIBench scores."""
    scores = list(scores)
    n = len(scores) or 1
    return {"n": len(scores), "accuracy": sum(s.correct for s in scores) / n,
            "hallucination_rate": sum(bool(s.detail.get("hallucination")) for s in scores) / n,
            "unparsed_rate": sum(s.status in ("unparsed", "truncated") for s in scores) / n}
