"""Finding run folders: the finished and unfinished run folders at or below the paths `janus report` and `janus view`
are given (a finished one must pass integrity.check_complete; an unfinished one is described by
unfinished.describe).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import RunFolderError
from .reader import DB


def find_run_dirs(paths: list[str | Path]) -> list[Path]:
    """Finished run folders at or below each path, in order, de-duplicated (:func:`scan_run_dirs`).

    Raises:
        RunFolderError: as scan_run_dirs, or no finished run at all (naming the unfinished ones and how to continue them).
    """
    finished, unfinished = scan_run_dirs(paths)
    if not finished:
        from .unfinished import describe

        where = ", ".join(str(p) for p in paths)
        raise RunFolderError(f"no finished run under {where}: " + "; ".join(describe(d) for d in unfinished))
    return finished


def scan_run_dirs(paths: list[str | Path], *, unchecked: list[Path] | None = None) -> tuple[list[Path], list[Path]]:
    """``(finished, unfinished)`` run folders at or below each path, in order, de-duplicated. A run folder holds
    summary.json or run.sqlite; it is unfinished when it holds run.sqlite but no COMPLETE (written last, store.py),
    whether it was interrupted, is still running, or lost COMPLETE to a repair that did not end.

    Raises:
        RunFolderError: a path does not exist or holds no run folder, a run folder has no run.sqlite (nothing to
            check its numbers against: :func:`unchecked_message`; with an ``unchecked`` list such folders are
            appended to it and counted as finished, for a caller that marks them), or a folder marked COMPLETE is
            not (integrity.check_complete).
    """
    from .integrity import check_complete

    finished: list[Path] = []
    unfinished: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        p = Path(p).expanduser()
        if not p.exists():
            raise RunFolderError(f"{p} does not exist")
        if _is_run_folder(p):
            found = [p]
        else:
            found = sorted({f.parent for name in ("summary.json", DB) for f in p.rglob(name) if f.is_file()})
        if not found:
            from .store import RunStore

            if RunStore.stopped_in_setup(p):  # what `janus run --resume` says of it too (killpoints.RECOVERY)
                raise RunFolderError(f"{p} holds no run: it was stopped while its run was being set up (before {DB} "
                                     "was in place); start it again with the command that made it (without --resume)")
            raise RunFolderError(f"no finished run (summary.json) under {p}")
        for d in found:
            if d.resolve() in seen:
                continue
            seen.add(d.resolve())
            if not (d / DB).is_file():  # summary.json alone: nothing to check a number against
                if unchecked is None:
                    raise RunFolderError(unchecked_message(d))
                unchecked.append(d)  # a caller that shows it marked as unchecked (janus view)
                finished.append(d)
                continue
            if not (d / "COMPLETE").exists():
                unfinished.append(d)
            else:
                check_complete(d)  # COMPLETE must mean every artefact is present and consistent (issue 12 item 6)
                finished.append(d)
    return finished, unfinished


def unchecked_message(d: Path) -> str:
    """The refusal of a run folder without its database (copied without it, or deleted)."""
    return (f"{d} has no {DB}: its numbers cannot be checked (summary.json and the other files are exports of the "
            f"run's database, and an edited one would be reported as it is); copy the run's {DB} back into it")


def _is_run_folder(p: Path) -> bool:
    return (p / "summary.json").is_file() or (p / DB).is_file()
