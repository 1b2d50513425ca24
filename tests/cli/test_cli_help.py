"""`janus` help and argument errors: one line, did-you-mean, defaults shown, subcommand help."""
from __future__ import annotations

import argparse

import pytest

from janus_memory.cli import main
from janus_memory.cli.parser import build_parser, did_you_mean


def _run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_did_you_mean():
    opts = ["--stream-size", "--test-size", "--tau", "--trigger"]
    assert did_you_mean("--stram-size", opts) == " (did you mean --stream-size?)"
    assert did_you_mean("--stram-size=3", opts) == " (did you mean --stream-size?)"
    assert did_you_mean("--zzzzzz", opts) == ""


def test_mistyped_option_is_one_line_with_hint(capsys):
    code, out, err = _run(["run", "--dataset", "gsm8k", "--stram-size", "3"], capsys)
    assert code == 2 and out == ""
    assert err == ("error: unrecognized arguments: --stram-size (did you mean --stream-size?); "
                   "see `janus run --help`\n")


def test_bad_number_is_one_line(capsys):
    code, out, err = _run(["run", "--stream-size", "x"], capsys)
    assert code == 2
    assert err == "error: argument --stream-size: invalid int value: 'x'; see `janus run --help`\n"


@pytest.mark.parametrize("cmd,first", [("memory", "usage: janus memory"), ("model", "usage: janus model")])
def test_group_without_subcommand_prints_its_own_help(cmd, first, capsys):
    assert main([cmd]) == 2
    out = capsys.readouterr().out
    assert out.startswith(first)
    assert ("diff" in out) if cmd == "memory" else ("fetch" in out and "path" in out)


def test_every_option_has_help_and_defaults_are_shown():
    p = build_parser()
    subs = p._janus_subparsers
    for name, sp in subs.items():
        for a in sp._actions:
            if isinstance(a, argparse._SubParsersAction):
                continue
            assert a.help, f"janus {name} {a.option_strings or a.dest} has no help"
    run = {a.dest: a.help for a in subs["run"]._actions}
    assert run["temperature"].endswith("(default: 0.7)")
    assert run["seed"].endswith("(default: 0)") and "split" in run["seed"]
    assert run["out"].endswith("(default: runs/latest)")
    assert run["warmup"].endswith("(default: 20)")
    demo = {a.dest: a.help for a in subs["demo"]._actions}
    assert "(default: 0.7)" not in demo["temperature"]  # the demo preset's own defaults


def test_help_reads_without_the_code():
    """What a stranger reads in `--help`: what each command does, short metavars, true defaults per command, and
    no grid option that the grid would silently ignore."""
    subs = build_parser()._janus_subparsers
    for name in ("demo", "run", "grid", "sweep", "report"):
        assert subs[name].description, f"janus {name} --help has no description"
    run = {a.dest: a for a in subs["run"]._actions}
    assert run["stream_size"].metavar == "N" and run["temperature"].metavar == "X" and run["out"].metavar == "DIR"
    assert "selective" in run["trigger"].help and run["trigger"].help.endswith("(default: mmt)")
    assert run["same_memory_shortcut"].help.endswith("(default: off)")  # paper preset
    demo = {a.dest: a for a in subs["demo"]._actions}
    assert demo["same_memory_shortcut"].help.endswith("(default: on)")  # small preset: JanusConfig.fast()
    assert demo["warmup"].help.endswith("(default: 4)")
    grid = {a.dest for a in subs["grid"]._actions}
    assert not grid & {"updater", "controller", "seed", "resume", "stream_order_seed", "overwrite"}
    assert {"updaters", "seeds", "out", "workers"} <= grid
    grid_out = next(a for a in subs["grid"]._actions if a.dest == "out")
    assert grid_out.help == "grid root: each cell runs in DIR/<dataset>/<cell>/seed<k> (default: runs/latest)"
    assert "resumes unfinished ones" in subs["sweep"].description
