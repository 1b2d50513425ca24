"""Scoring of math answers: math-verify 0.9.0 in worker processes with our own timeout, plus strictness rules.

Why processes: math-verify's own timeouts use SIGALRM, which only works on the main thread (C09); we call it with
``parsing_timeout=None, timeout_seconds=None`` inside forked worker processes, wait at most ``timeout_s`` and kill a
worker that hangs (status "timeout"); the pool then spawns a replacement, so one pathological expression never blocks
a run. Processes also give real parallelism on both cores (sympy holds the GIL).

Workers die with their parent whatever kills it: PR_SET_PDEATHSIG=SIGKILL when forked from the
main thread, and in every worker a thread that exits as soon as the parent pid changes (polled every 0.2 s).

Decisions (failure cases C07, C08; pinned by tests/tasks/test_verify_math.py):
- multi-answer golds need set equality (a subset or superset is wrong; order does not matter);
- ``1 \\pm \\sqrt{19}`` needs the ± (one branch is wrong);
- exact numbers are compared exactly: ``\\frac{1}{2^{98}}`` is not ``\\frac{1}{2^{99}}`` (math-verify 0.9.0 says it is);
- a decimal counts for an exact value only if it is *exactly* equal: ``0.34`` = ``\\frac{17}{50}``, but the rounded
  ``0.0535714`` is NOT ``\\frac{3}{56}`` (math-verify 0.9.0 accepts it at float_rounding=6). This matches the paper's
  exact-match checker and the prompt, which asks for fractions, not decimals;
- units, ``\\text{}``, ``\\%``, ``\\$``, degrees, ``\\left``/``\\right`` and ``\\dfrac`` are normalised on both sides, so every
  MATH-500 gold verifies against itself (C08). ``28\\%`` and ``28`` are equal (Hendrycks-style: the percent sign is dropped).
"""
from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import os
import re
import signal
import threading
import time
from typing import Callable, Sequence

import math_verify  # noqa: F401  - imported before any worker is forked (no import lock held in a child)
import sympy

from .answer_text import plain_numerals
from .extract_math import paper_normalize
from .sandbox import set_parent_death_signal

DEFAULT_TIMEOUT_S = 5.0

_UNIT_TAIL = re.compile(r"^(?P<body>.*?\S)\s*\\(?:text|mbox|mathrm|textbf)\s*\{\s*[A-Za-z][A-Za-z .]*\}\s*$", re.S)
_TEXT_WRAP = re.compile(r"\\(?:text|mbox|mathrm|textbf)\s*\{([^{}]*)\}")


_TEXT_VALUE = re.compile(r"^\\(?:text|mbox|mathrm|textbf)\s*\{\s*(?P<v>-?\d[\d.,]*(?:/\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?)?"
                         r"\s*[A-Za-z][A-Za-z .]*\}$")


def normalize_for_verify(ans: str) -> str:
    """Normalise an answer (gold or extracted) before parsing: unicode numerals, units, \\text{} tails and a
    ``\\text{45 degrees}`` value, %, $, degrees, \\left/\\right."""
    a = plain_numerals((ans or "").strip())
    a = re.sub(r"^\$+|\$+$", "", a).strip()
    m = _TEXT_VALUE.match(a)
    if m:  # "\text{45 degrees}", "\text{12 cm}": the value, its unit in words inside the same \text{}
        a = m.group("v")
    for _ in range(3):
        m = _UNIT_TAIL.match(a)
        if not m or not re.search(r"\d", m.group("body")):
            break
        a = m.group("body").strip()
    a = a.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    a = re.sub(r"\\left(?![A-Za-z])|\\right(?![A-Za-z])", "", a)
    a = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "", a)
    # thousands groups written with a negative thin space or braces (MATH: "10,\\!080", "9{,}500") are one number
    a = re.sub(r"(?<=\d)(?:,\s*\\!\s*|\{,\})(?=\d{3}(?!\d))", "", a)
    a = a.replace("\\%", "").replace("%", "").replace("\\$", "")
    # LaTeX spaces (\, \! \; \: "\ ") go, but a row break \\ stays whole: scanning pairs first keeps
    # "-2 \\ -14" from being read as "-2 \" + "\ -14" (vectors lost every entry after the first)
    a = re.sub(r"\\\\|\\[,!;: ]", lambda m: m.group(0) if m.group(0) == "\\\\" else "", a)
    a = re.sub(r"\\\\\[\s*-?[\d.]+\s*(?:pt|em|ex|mm|cm|in|mu|bp)\s*\]", lambda m: "\\\\", a)  # "\\[2pt]": a row break
    a = a.replace("{,}", ",").strip()
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", a):  # "58,500" is a number (as the extractor reads it)
        a = a.replace(",", "")
    return a


def _plain(a: str) -> str:
    """Normalised string for the exact-match shortcut: \\text{} unwrapped, the paper's normalisation, (X) -> X."""
    s = _TEXT_WRAP.sub(r"\1", a)
    s = paper_normalize(s)
    m = re.fullmatch(r"\(([A-Za-z])\)", s)
    return m.group(1) if m else s


def _parse(s: str):
    from math_verify import parse
    out = parse("$" + s + "$", parsing_timeout=None)
    if not out:
        out = parse("\\boxed{" + s + "}", parsing_timeout=None)
    return out


def _exact(e):
    try:
        return e.xreplace({f: sympy.Rational(str(f)) for f in e.atoms(sympy.Float)})
    except Exception:
        return e


def _num_equal(a, b) -> bool | None:
    """Exact equality of two closed-form numbers (decimals read exactly); None when not both numbers."""
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return None
    if a.free_symbols or b.free_symbols or not (a.is_number and b.is_number):
        return None
    ea, eb = _exact(a), _exact(b)
    if ea.is_Rational and eb.is_Rational:
        return bool(ea == eb)
    try:
        d = abs(complex(sympy.N(ea - eb, 60)))
        m = max(abs(complex(sympy.N(ea, 60))), abs(complex(sympy.N(eb, 60))))
    except Exception:
        return None
    return d <= 1e-30 * max(m, 1e-300)


def _strict_ok(g, p) -> bool:
    """False when math-verify's "equal" must be overridden (C07): set vs scalar, set sizes, inexact numbers."""
    gm, pm = isinstance(g, sympy.MatrixBase), isinstance(p, sympy.MatrixBase)
    if gm or pm:  # vectors and matrices: same shape, every entry exactly equal
        if not (gm and pm) or g.shape != p.shape:
            return False
        return all(_num_equal(x, y) is not False for x, y in zip(g, p))
    gs, ps = isinstance(g, sympy.FiniteSet), isinstance(p, sympy.FiniteSet)
    if gs != ps:
        return False
    if gs:
        ge, pe = list(g.args), list(p.args)
        if len(ge) != len(pe):
            return False
        left = list(pe)
        for x in ge:
            hit = next((y for y in left if _num_equal(x, y) is not False), None)
            if hit is None:
                return False
            left.remove(hit)
        return True
    return _num_equal(g, p) is not False


# a number written in a base: "1011_2", "1011_{2}", "(1011)_2", "[1011]_{2}", "\left(1011\right)_2" (\left/\right are
# gone after normalisation), "1011_{(2)}", "(1011)_{\text{2}}"
_BASE_FORM = re.compile(r"^[(\[]?\s*(?P<digits>[0-9A-Za-z]+)\s*[)\]]?\s*_\s*\{?\s*\(?\s*(?:\\text\s*\{\s*)?"
                        r"(?P<base>\d+)\s*\}?\s*\)?\s*\}?$")


def base_form(a: str) -> tuple[str, int | None] | None:
    """(digits, base) of a normalised answer that is a number written in a base, (digits, None) of plain digits,
    None for anything else."""
    s = re.sub(r"\s+", "", a or "")
    if re.fullmatch(r"\d+", s):
        return s, None
    m = _BASE_FORM.match(s)
    if not m or (m.group(0).startswith(("(", "[")) != bool(re.search(r"[)\]]\s*_", s))):
        return None
    digits, base = m.group("digits").upper(), int(m.group("base"))
    if not all(c.isdigit() or 10 <= int(c, 36) < base for c in digits):
        return None  # "a_1", "x_2": an indexed name, not digits of that base
    return digits, base


def verify_answer(gold: str, pred: str) -> bool:
    """In-process check of an extracted answer against a gold answer (no timeout: call via MathVerifier).

    gold: the dataset's answer (LaTeX, no delimiters needed). pred: the extracted answer string.
    """
    from math_verify import verify
    g, p = normalize_for_verify(gold), normalize_for_verify(pred)
    if not p:
        return False
    if _plain(g) == _plain(p):
        return True
    bg, bp = base_form(g), base_form(p)
    if bg is not None and bp is not None and (bg[1] is not None or bp[1] is not None):
        # a base subscript is compared exactly: the same digits, and the same base where both write one
        # ("(1011)_2" is "1011_2" and "1011"; "1011_3" is not "1011_2", which math-verify reads as equal)
        return bg[0] == bp[0] and (bg[1] is None or bp[1] is None or bg[1] == bp[1])
    G, P = _parse(g), _parse(p)
    if not G or not P:
        return False
    if not verify(G, P, timeout_seconds=None):
        return False
    return _strict_ok(G[0], P[0])


# ------------------------------------------------------------------------------------------ worker process pool

PARENT_POLL_S = 0.2


def _watch_parent(parent_pid: int) -> None:
    """Worker side of "die with the parent": exit as soon as the parent process is gone."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def _tie_to_parent(parent_pid: int, from_main_thread: bool) -> None:
    """PR_SET_PDEATHSIG=SIGKILL (instant, whatever kills the parent, SIGKILL included) when the worker was forked from
    the parent's main thread (the signal follows the forking *thread*), plus a thread polling the parent pid, which
    covers workers forked from pool threads and a parent that died before the prctl."""
    if from_main_thread:
        set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="janus-parent-watch").start()


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _worker_main(conn, comparator, parent_pid: int = 0, from_main_thread: bool = False):
    # Ctrl-C, and SIGTERM sent to the whole process group (`timeout`, `kill -TERM -- -PGID`, a batch scheduler), reach
    # this worker too. Left to the handlers inherited from the CLI, the worker would print a second "terminated" line
    # and a KeyboardInterrupt traceback. SIGINT is ignored (the parent handles Ctrl-C and ends this worker); SIGTERM
    # gets the default action, a silent exit: ignoring it would make multiprocessing's exit handler, which sends
    # SIGTERM to daemon children through Popen.terminate and then joins them, wait forever (a grid worker hung so).
    # Both signals are blocked across the fork (_Worker) so that none lands before they are set here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if parent_pid:
        _tie_to_parent(parent_pid, from_main_thread)
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)
    fn = comparator or verify_answer
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        try:
            conn.send(("ok", bool(fn(*msg))))
        except BaseException as e:  # noqa: BLE001 - report any checker failure as status "error"
            conn.send(("error", f"{type(e).__name__}: {e}"[:300]))


class _WorkerProcess(mp.context.ForkProcess):
    """Ending a worker is SIGKILL: it may be inside a long math-verify call (SIGTERM would also end it, see
    _worker_main, which multiprocessing's own exit handler relies on: it calls ``_popen.terminate()`` directly)."""

    def terminate(self) -> None:
        self.kill()


class _Worker:
    def __init__(self, ctx, comparator):
        self.conn, child = ctx.Pipe()
        main = threading.current_thread() is threading.main_thread()
        self.proc = _WorkerProcess(target=_worker_main, args=(child, comparator, os.getpid(), main), daemon=True)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # the fork copies this thread's mask
        try:
            self.proc.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a signal held meanwhile reaches the parent now
        child.close()

    def kill(self):
        try:
            self.proc.kill()
            self.proc.join(2)
        except Exception:
            pass
        try:
            self.conn.close()
        except Exception:
            pass

    def close(self):
        try:
            self.conn.send(None)
        except Exception:
            pass
        self.proc.join(1)
        if self.proc.is_alive():
            self.kill()


class MathVerifier:
    """Thread-safe pool of ``workers`` verification processes with a per-item wall timeout.

    check(gold, pred) -> (correct: bool, status: "ok" | "timeout" | "error"). A timed-out worker is killed and replaced.
    comparator: optional ``f(gold, pred) -> bool`` run in the workers instead of ``verify_answer`` (tests inject a
    slow one to prove the timeout). Works from any thread (C09).
    """

    def __init__(self, workers: int = 2, timeout_s: float = DEFAULT_TIMEOUT_S,
                 comparator: Callable[[str, str], bool] | None = None):
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers, self.timeout_s, self.comparator = workers, float(timeout_s), comparator
        self._ctx = mp.get_context("fork")
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._count = 0
        self._all: set[_Worker] = set()

    def _acquire(self) -> _Worker:
        with self._cond:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._count < self.workers:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            w = _Worker(self._ctx, self.comparator)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._all.add(w)
        return w

    def _release(self, w: _Worker) -> None:
        with self._cond:
            self._idle.append(w)
            self._cond.notify()

    def _discard(self, w: _Worker) -> None:
        w.kill()
        with self._cond:
            self._count -= 1
            self._all.discard(w)
            self._cond.notify()

    def check(self, gold: str, pred: str | None) -> tuple[bool, str]:
        if pred is None or not str(pred).strip():
            return False, "ok"
        w = self._acquire()
        try:
            w.conn.send((str(gold), str(pred)))
            if w.conn.poll(self.timeout_s):
                status, val = w.conn.recv()
            else:
                self._discard(w)
                return False, "timeout"
        except Exception:
            self._discard(w)
            return False, "error"
        self._release(w)
        return (bool(val), "ok") if status == "ok" else (False, "error")

    def check_many(self, pairs: Sequence[tuple[str, str | None]]) -> list[tuple[bool, str]]:
        """Check many (gold, pred) pairs on all workers; results in input order."""
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=self.workers) as ex:
            return list(ex.map(lambda gp: self.check(*gp), pairs))

    def worker_pids(self) -> list[int]:
        """Process ids of the live worker processes (for tests and diagnostics)."""
        with self._cond:
            return sorted(w.proc.pid for w in self._all if w.proc.pid is not None)

    def close(self) -> None:
        with self._cond:
            ws, self._all, self._count, self._idle = list(self._all), set(), 0, []
            self._cond.notify_all()
        for w in ws:
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_DEFAULT: MathVerifier | None = None
_DEFAULT_LOCK = threading.Lock()


def get_verifier() -> MathVerifier:
    """The process-wide shared verifier (2 workers, 5 s timeout), created on first use."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = MathVerifier()
            atexit.register(_DEFAULT.close)
        return _DEFAULT


def check_math(gold: str, pred: str | None) -> tuple[bool, str]:
    """Shared-pool check of one extracted answer: (correct, status)."""
    return get_verifier().check(gold, pred)


def paper_equal(gold: str, pred: str | None) -> bool:
    """The paper's checker (``--faithful``): normalised exact string match (docs/research-notes.md §6.2)."""
    return pred is not None and paper_normalize(pred) == paper_normalize(gold)
