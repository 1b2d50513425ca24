"""APIBench scoring by the AST: the call signatures and model identifiers of a line of code (constants folded,
variables bound to loaded models followed, identifiers renamed in 2024 and spellings the library resolves itself
read as the database's), compared against the API database's entries by apibench.py.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass


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


# Spellings the called library resolves itself (each one read as the database's):
# - transformers.pipeline's own task aliases (TASK_ALIASES in transformers/pipelines): "sentiment-analysis" is
#   "text-classification", "ner" is "token-classification", ...;
# - sentence-transformers loads ``SentenceTransformer('all-MiniLM-L6-v2')`` from ``sentence-transformers/all-MiniLM-L6-v2``
#   (it prefixes its organisation to a name without one, unless the name is an org-less transformers model);
# - timm loads ``create_model('hf_hub:timm/X')``, ``'timm/X'`` and the pretrained tag ``'X'`` from the same hub
#   repository ``timm/X``; open_clip writes the prefix ``hf-hub:``.
PIPELINE_TASK_ALIASES = {"sentiment-analysis": "text-classification", "ner": "token-classification",
                         "vqa": "visual-question-answering", "text-to-speech": "text-to-audio"}
_HUB_PREFIX = re.compile(r"^hf[_-]hub:")


# the org-less transformers models sentence-transformers loads as they are (its ``basic_transformer_models``); any
# other name without an organisation is looked up under sentence-transformers/
SENTENCE_TRANSFORMERS_PLAIN = frozenset((
    "albert-base-v1 albert-base-v2 albert-large-v1 albert-large-v2 albert-xlarge-v1 albert-xlarge-v2 "
    "albert-xxlarge-v1 albert-xxlarge-v2 bert-base-cased-finetuned-mrpc bert-base-cased bert-base-chinese "
    "bert-base-german-cased bert-base-german-dbmdz-cased bert-base-german-dbmdz-uncased bert-base-multilingual-cased "
    "bert-base-multilingual-uncased bert-base-uncased bert-large-cased-whole-word-masking-finetuned-squad "
    "bert-large-cased-whole-word-masking bert-large-cased bert-large-uncased-whole-word-masking-finetuned-squad "
    "bert-large-uncased-whole-word-masking bert-large-uncased camembert-base ctrl distilbert-base-cased-distilled-squad "
    "distilbert-base-cased distilbert-base-german-cased distilbert-base-multilingual-cased "
    "distilbert-base-uncased-distilled-squad distilbert-base-uncased-finetuned-sst-2-english distilbert-base-uncased "
    "distilgpt2 distilroberta-base gpt2-large gpt2-medium gpt2-xl gpt2 openai-gpt roberta-base-openai-detector "
    "roberta-base roberta-large-mnli roberta-large-openai-detector roberta-large t5-11b t5-3b t5-base t5-large t5-small "
    "transfo-xl-wt103 xlm-clm-ende-1024 xlm-clm-enfr-1024 xlm-mlm-100-1280 xlm-mlm-17-1280 xlm-mlm-en-2048 "
    "xlm-mlm-ende-1024 xlm-mlm-enfr-1024 xlm-mlm-enro-1024 xlm-mlm-tlm-xnli15-1024 xlm-mlm-xnli15-1024 xlm-roberta-base "
    "xlm-roberta-large-finetuned-conll02-dutch xlm-roberta-large-finetuned-conll02-spanish "
    "xlm-roberta-large-finetuned-conll03-english xlm-roberta-large-finetuned-conll03-german xlm-roberta-large "
    "xlnet-base-cased xlnet-large-cased").split())


def library_id(func: str, ident: str) -> str:
    """``ident`` as the library behind ``func`` (the last part of the called name) resolves it (see above)."""
    if ident == UNRESOLVED:
        return ident
    if func == "SentenceTransformer" and "/" not in ident and ident not in SENTENCE_TRANSFORMERS_PLAIN:
        return "sentence-transformers/" + ident
    if func in ("create_model", "create_model_and_transforms", "create_model_from_pretrained"):
        ident = _HUB_PREFIX.sub("", ident)
        return ident[len("timm/"):] if ident.startswith("timm/") else ident
    return ident


def library_spelling(call: str) -> str:
    """A gold call rewritten in a spelling its library resolves to the same thing (sentence-transformers without its
    organisation, a pipeline task's newer name, timm's ``hf_hub:`` form, a shell command fenced), or unchanged: how
    a model may write a right answer that no database entry spells (the scorer audit and its tests)."""
    call = call.replace("SentenceTransformer('sentence-transformers/", "SentenceTransformer('")
    for a, b in (("'sentiment-analysis'", "'text-classification'"), ("'ner'", "'token-classification'")):
        if call.startswith("pipeline(" + a):
            return call.replace(a, b, 1)
    if call.startswith("timm.create_model('") and "hf_hub:" not in call:
        return call.replace("timm.create_model('", "timm.create_model('hf_hub:timm/", 1)
    if call.startswith("mlagents-load-from-hf"):
        return "```bash\n" + call.replace("'", '"') + "\n```"
    return call


def _role_nodes(node: ast.Call, last: str) -> tuple:
    """(the argument naming the model/repository, the pipeline's task argument) of a call, each None if absent."""
    ident = next((k.value for k in node.keywords if k.arg in ID_KEYWORDS), None)
    pos = 1 if last in _TASK_FIRST else 0
    if ident is None and len(node.args) > pos and not isinstance(node.args[pos], ast.Starred):
        ident = node.args[pos]
    task = None
    if last in _TASK_FIRST:
        task = next((k.value for k in node.keywords if k.arg == "task"), None)
        if task is None and node.args and not isinstance(node.args[0], ast.Starred):
            task = node.args[0]
    return ident, task


def _value(sub: ast.Call, last: str, arg, env: dict | None) -> str | None:
    """A literal argument value of ``sub``, with the library's own spelling rules applied to its model identifier
    and to a pipeline task."""
    v = _lit(arg, env)
    if v is None:
        return None
    ident, task = _role_nodes(sub, last)
    if arg is ident:
        return library_id(last, v)
    if arg is task:
        return PIPELINE_TASK_ALIASES.get(v, v)
    return v


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
    return frozenset(library_id(last, i) for i in ids if i)


def _extra_ids(node: ast.Call, env: dict | None = None) -> frozenset:
    """Identifiers of EXTRA_ID_KEYWORDS given as (foldable) strings: ``pipeline(..., tokenizer='org/tok')``."""
    vals = [_fold(k.value, env) for k in node.keywords if k.arg in EXTRA_ID_KEYWORDS]
    return frozenset(canonical_id(v) for v in vals if isinstance(v, str))


def _bindings(tree) -> dict:
    """Variables assigned a foldable string (``model_id = 'org/name'``, ``org = 'x'; m = f'{org}/y'``), the last
    assignment in source order winning: the diffusers idiom ``model_id = '...'; X.from_pretrained(model_id)`` names
    its model through one. A variable bound to an expression that loads a model is ``_OBJ``; any other
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
            vals: list[str | None] = []
            ids: set[str] = set()
            extra: set[str] = set()
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    sub_last = (_dotted(sub.func) or "").split(".")[-1]
                    vals += [_value(sub, sub_last, a, env) for a in sub.args]
                    vals += [_value(sub, sub_last, k.value, env) for k in sub.keywords]
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


def _parse_tree(src: str):
    """The ast of an api_call string (with the repairs listed in the module docstring) that holds a call, or None."""
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
            tree = ast.parse(x)
        except (SyntaxError, ValueError):
            continue
        if _calls(tree):
            return tree
    return None


def parse_api_call(src: str) -> list[CallSig] | None:
    """Candidate calls in an api_call string (with the repairs listed in the module docstring); None if unparseable."""
    tree = _parse_tree(src)
    return _calls(tree) if tree is not None else None


def chained_methods(src: str) -> list[str]:
    """Methods called on what a loader returns: chained onto it (``X.from_pretrained('m').to('cuda')`` -> ``to``) or
    on a variable bound to a loaded model (``model = X.from_pretrained('m'); model.generate(...)`` -> ``generate``);
    not on other calls (``requests.get(url).json()``)."""
    tree = _parse_tree(src)
    if tree is None:
        return []
    env = _bindings(tree)
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        base = node.func.value
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
        if (isinstance(base, ast.Call) and _loads(base)) or (isinstance(base, ast.Name) and env.get(base.id) is _OBJ):
            out.append(node.func.attr)
    return out


# Generic loaders: a class of the same library that resolves the concrete class from the model's own files
# (diffusers' DiffusionPipeline reads model_index.json; transformers' Auto classes read config.json). On the entry's
# own model it loads what the entry's class loads, so it matches that entry (docs/tasks.md, APIBench).
_AUTO_HEAD_SPECIAL = {  # heads whose concrete classes are not "<Arch>For<Head>"
    "Seq2SeqLM": re.compile(r"^(?:T5|MT5|LongT5|UMT5|Bart|MBart|Pegasus|PegasusX|BigBirdPegasus|Blenderbot|"
                            r"BlenderbotSmall|M2M100|LED|ProphetNet|FSMT|NllbMoe|SwitchTransformers|Plbart|Marian)"
                            r"ForConditionalGeneration$|^MarianMTModel$|^FSMTForConditionalGeneration$"),
    "SpeechSeq2Seq": re.compile(r"^(?:Whisper|Speech2Text|SpeechT5)ForConditionalGeneration$|^SpeechT5ForSpeechToText$"),
    "Vision2Seq": re.compile(r"^(?:Blip|Blip2|Pix2Struct|Kosmos2|InstructBlip|Llava)ForConditionalGeneration$"
                             r"|^VisionEncoderDecoderModel$"),
    "TableQuestionAnswering": re.compile(r"^TapasForQuestionAnswering$"),
    "DocumentQuestionAnswering": re.compile(r"^(?:LayoutLM|LayoutLMv2|LayoutLMv3)ForQuestionAnswering$"),
    "VisualQuestionAnswering": re.compile(r"^(?:Vilt|Blip)ForQuestionAnswering$"),
}
_NOT_PLAIN_QA = re.compile(r"^(?:Tapas|LayoutLM|LayoutLMv2|LayoutLMv3|Vilt|Blip)ForQuestionAnswering$")
_AUTO_PLAIN = {"AutoTokenizer": r"\w+Tokenizer(?:Fast)?", "AutoProcessor": r"\w+Processor",
               "AutoFeatureExtractor": r"\w+FeatureExtractor", "AutoImageProcessor": r"\w+ImageProcessor",
               "AutoConfig": r"\w+Config"}
_NOT_BASE_MODEL = re.compile(r"ControlNet|UNet|Autoencoder|VQ|Prior|MTModel$|EncoderDecoderModel$|^Model$|^BaseModel$")


def generic_covers(generic: str, concrete: str, libraries: str) -> bool:
    """True when the class ``generic`` (the caller's) loads what ``concrete`` (a database entry's class) loads, on
    the same model: ``DiffusionPipeline`` any diffusers pipeline class; ``AutoModelFor<Head>`` (and ``TFAutoModel...``)
    the classes with that head (``<Arch>For<Head>``; the seq2seq, speech and vision heads and the table, document
    and visual question answering heads by their own classes); ``AutoModel`` a base ``<Arch>Model``; ``AutoTokenizer``,
    ``AutoProcessor``, ``AutoFeatureExtractor``, ``AutoImageProcessor``, ``AutoConfig`` their kinds. ``libraries`` is
    the entry's stated requirements (lower case): diffusers for DiffusionPipeline, transformers for the Auto classes."""
    if generic == concrete:
        return True
    if generic == "DiffusionPipeline":
        return concrete.endswith("Pipeline") and concrete != "Pipeline" and "diffusers" in libraries
    if "transformers" not in libraries:
        return False
    tf = generic.startswith("TF")
    g = generic[2:] if tf else generic
    c = concrete[2:] if tf and concrete.startswith("TF") else concrete
    if tf != concrete.startswith("TF"):
        return False
    if g in _AUTO_PLAIN:
        return re.fullmatch(_AUTO_PLAIN[g], c) is not None
    if g == "AutoModel":
        return re.fullmatch(r"[A-Z][A-Za-z0-9]*Model", c) is not None and not _NOT_BASE_MODEL.search(c)
    if g.startswith("AutoModelFor"):
        head = g[len("AutoModelFor"):]
        if head in _AUTO_HEAD_SPECIAL:
            return _AUTO_HEAD_SPECIAL[head].search(c) is not None
        if head == "QuestionAnswering" and _NOT_PLAIN_QA.match(c):
            return False
        return re.fullmatch(rf"[A-Z][A-Za-z0-9]*For{head}", c) is not None
    return False


GENERIC_LOADERS = frozenset({"DiffusionPipeline", "AutoModel", *_AUTO_PLAIN} | {f"TF{x}" for x in ("AutoModel",)})


def is_generic(cls: str) -> bool:
    """A generic loader class (:func:`generic_covers`)."""
    c = cls[2:] if cls.startswith("TFAuto") else cls
    return cls in GENERIC_LOADERS or c.startswith("AutoModelFor") or c in _AUTO_PLAIN
