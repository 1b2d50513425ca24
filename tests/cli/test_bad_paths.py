"""Bad input is one line, exit 2, nothing created: every option and argument that takes a path, found in
the argparse tree (cli/flags.py gives each the type path_arg, so a new one is covered here without a new test row),
refuses a name longer than the file system allows, a whole path longer than it allows and a symlink loop; a config
file's paths and a negative updater setting are refused the same way."""
from __future__ import annotations

import argparse

import pytest

from janus_memory import cli
from janus_memory.cli.parser import build_parser, path_arg

# valid values for the positionals of each command, so the path under test is the only bad value
POSITIONALS = {("memory", "diff"): {"run_dir": ".", "step_a": "0"}, ("report",): {"dirs": "."},
               ("sweep",): {"grid": "g.yaml"}, ("replay",): {"inputs": "x.json"}}


def _path_actions():
    """(command words, action) for every path-typed action of the parser tree."""
    out = []

    def walk(p, words):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, (*words, name))
            elif a.type is path_arg:
                out.append((words, a))
    walk(build_parser(), ())
    return out


def _argv(words, action, value):
    pos = dict(POSITIONALS.get(words, {}))
    if not action.option_strings:
        pos[action.dest] = value
        return [*words, *pos.values()]
    return [*words, *pos.values(), action.option_strings[-1], value]


CASES = [(w, a) for w, a in _path_actions()]
IDS = [" ".join(w) + " " + (a.option_strings[-1] if a.option_strings else a.dest) for w, a in CASES]


def test_every_path_option_named_in_the_issue_is_path_typed():
    names = set(IDS)
    for want in ("run --out", "run --resume", "run --config", "run --data-dir", "report dirs", "report --out",
                 "memory diff run_dir", "run --cache-dir", "run --model-path", "grid --out", "sweep grid",
                 "model fetch --from-dir", "demo --out"):
        assert want in names


@pytest.mark.parametrize("kind", ["long name", "long path", "symlink loop"])
@pytest.mark.parametrize("words,action", CASES, ids=IDS)
def test_a_bad_path_is_one_line_exit_2_and_nothing_is_created(words, action, kind, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    value = {"long name": str(tmp_path / ("n" * 300) / "x"),
             "long path": "/".join([str(tmp_path), *["d" * 200] * 25]),
             "symlink loop": str(tmp_path / "loop1" / "x")}[kind]
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SystemExit) as e:
        cli.main(_argv(words, action, value))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: argument ")
    why = {"long name": "holds a name of 300 bytes; this file system allows 255",
           "long path": "bytes long; this file system allows 4095", "symlink loop": "is a symlink loop"}[kind]
    assert why in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_config_file_path_and_a_negative_updater_setting_are_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "a.yaml").write_text("backend: fake\nout: loop1/run\n")
    (tmp_path / "b.yaml").write_text("backend: fake\nencoder: hashing\nstream_size: 2\nupdater_config: {top_k: -4}\n")
    assert cli.main(["run", "--config", "a.yaml"]) == 2
    assert capsys.readouterr().err == ("error: invalid value for 'out': loop1/run is a symlink loop (it never reaches a "
                                       "file or folder) (got 'loop1/run') (line 2 of a.yaml)\n")
    assert cli.main(["run", "--config", "b.yaml", "--out", "r"]) == 2
    assert capsys.readouterr().err == ("error: invalid value for 'updater_config.top_k': must be in [0, 1048576], got -4 "
                                       "(line 4 of b.yaml)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml", "loop1", "loop2"]


def test_no_option_that_takes_a_path_escapes_the_check():
    """An option whose metavar or name says it takes a path is path-typed (cli/flags._typed_paths), so the table
    above covers it: none of another type, or missed by the name list."""
    import re

    from janus_memory.cli.flags import PATH_DESTS, PATH_METAVARS

    loose = []

    def walk(p, words):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, (*words, name))
            elif a.nargs != 0 and a.type is not path_arg and (
                    a.metavar in PATH_METAVARS or a.dest in PATH_DESTS
                    or re.search(r"(^|_)(dirs?|paths?|files?|folders?|out)($|_)", a.dest)):
                loose.append(" ".join(words) + " " + (a.option_strings[-1] if a.option_strings else a.dest))
    walk(build_parser(), ())
    assert loose == []


@pytest.mark.parametrize("key", ["model_path", "llm: {model_path"])
def test_a_config_files_model_path_is_checked_too(key, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    close = "}" if key.startswith("llm") else ""
    (tmp_path / "c.yaml").write_text(f"backend: local\n{key}: loop1/m.gguf{close}\n")
    assert cli.main(["run", "--config", "c.yaml", "--out", "r"]) == 2
    assert capsys.readouterr().err == ("error: invalid value for 'llm.model_path': loop1/m.gguf is a symlink loop (it "
                                       "never reaches a file or folder) (got 'loop1/m.gguf') (line 2 of c.yaml)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "loop1", "loop2"]
