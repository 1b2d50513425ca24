"""What a report shows at a glance: grid pairs with their interval, one preset line, the n/a cosine band,
injected steps on the timeline and the trajectory, coinciding curves kept visible, one overhead definition."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from janus_memory.report import plots
from janus_memory.report.report import build_report, load_method_runs
from test_report import JANUS, _decs, _with_tests, make_run

PRESET = {"name": "paper", "janus_preset": "paper", "replay": "fresh", "encoder": "triggers decided by encoder hashing",
          "janus": "janus preset: paper (trigger=TRIG, tau=0.0, same_memory_shortcut=False, early_stop=False, "
                   "dedup=False, clustering=full, replay_limit=None)"}


@pytest.fixture
def captured(monkeypatch):
    """Figures handed to save_figure, kept open for inspection instead of written."""
    figs = []

    def keep(fig, path):
        figs.append(fig)
        return Path(path)

    monkeypatch.setattr(plots, "save_figure", keep)
    yield figs
    plt.close("all")


def _set_preset(run: Path, trigger: str) -> None:
    cfg = json.loads((run / "config.json").read_text())
    ps = {**PRESET, "janus": PRESET["janus"].replace("TRIG", trigger)}
    (run / "config.json").write_text(json.dumps({**cfg, "preset_summary": ps}))


def _grid(root: Path) -> Path:
    g = root / "grid" / "gsm8k"
    base = make_run(g / "dc_rs" / "seed0", "gsm8k", "dc_rs", {"dc_rs": {"test_accuracy": 0.4}})
    jan = make_run(g / "dc_rs+janus" / "seed0", "gsm8k", "dc_rs", {"dc_rs+janus": {
        "test_accuracy": 0.8, "triggers": 2, "decisions": _decs("ww.AA.")}})
    alw = make_run(g / "dc_rs+janus[trigger=always]" / "seed0", "gsm8k", "dc_rs", {"dc_rs+janus": {
        "test_accuracy": 0.6, "triggers": 4, "decisions": _decs("wwAAAA")}}, janus={**JANUS, "trigger": "always"},
        cell="dc_rs+janus[trigger=always]")
    make_run(g / "dc_rs" / "seed1", "gsm8k", "dc_rs", {"dc_rs": {"test_accuracy": 0.2}}, seed=1)  # no +Janus partner
    _with_tests(base, "dc_rs", [True, True, False, False, False])
    _with_tests(jan, "dc_rs+janus", [True, True, True, True, False])
    for run, trig in ((base, "mmt"), (jan, "mmt"), (alw, "always"), (g / "dc_rs" / "seed1", "mmt")):
        _set_preset(run, trig)
    return root / "grid"


def test_grid_report_pairs_cells_and_prints_the_preset_once(tmp_path):
    rep = build_report([str(_grid(tmp_path))], str(tmp_path / "rep"))
    rows = rep["tables"]["paired"]["rows"]
    assert [(r["base"], r["label"], r["seed"], r["same_folder"], r["n"], r["janus_only"], r["base_only"], r["diff"],
             r["p_mcnemar"]) for r in rows] == [("dc_rs", "dc_rs+janus", 0, False, 5, 2, 0, 0.4, 0.5)]
    assert rows[0]["base_run_dir"].endswith("gsm8k/dc_rs/seed0") and rows[0]["run_dir"].endswith("dc_rs+janus/seed0")
    md = Path(rep["report"]).read_text().splitlines()
    assert ("| GSM8K | dc_rs vs dc_rs+janus | dc_rs/seed0 vs dc_rs+janus/seed0 | 0 | 5 | 40.0 | 80.0 | +40.0 | "
            "[-16.3, +72.6] | 2/0 | 0.5 |") in md
    head = "What the runs ran with (two presets: the run preset sets prompts, parsers and replays; the Janus preset is " \
           "the controller):"
    assert md.count(head) == 1
    i = md.index(head)
    assert md[i + 2:i + 16] == [
        "- Run preset: paper (the authors' prompts, parsers, checker and sampling; Janus replays a fresh sample per "
        "task, memory and comparison)",
        "- Janus preset: paper", "- Janus warm-up: 2", "- Janus trigger: (per cell, below)",
        "- Janus evaluation set: the paper's hybrid set of coverage 2 + boundary 1 + fresh 2 = 5 tasks",
        "- Janus decision: the paper's rule: deploy the candidate when it solves at least as many of the tasks as the "
        "old memory (ties go to the candidate)",
        "- Janus differs from the paper's: (per cell, below)", "- Encoder (decides the triggers): not recorded", "",
        "Per cell:", "",
        "- dc_rs+janus: Janus trigger: MMT (compares when cos(z_t, m_t-1) < tau = 0; beta = 0.9); Janus differs from "
        "the paper's: warm-up 2 (paper 20), coverage 2 (paper 12), boundary 1 (paper 8), fresh 2 (paper 5)",
        "- dc_rs+janus[trigger=always]: Janus trigger: always (a comparison at every step after the warm-up); Janus "
        "differs from the paper's: warm-up 2 (paper 20), coverage 2 (paper 12), boundary 1 (paper 8), fresh 2 (paper "
        "5), trigger always (paper mmt)", ""]


def test_one_preset_line_when_every_run_has_the_same(tmp_path):
    root = _grid(tmp_path)
    shutil.rmtree(root / "gsm8k" / "dc_rs+janus[trigger=always]")
    md = Path(build_report([str(root)], str(tmp_path / "rep"))["report"]).read_text().splitlines()
    i = md.index("- Janus trigger: MMT (compares when cos(z_t, m_t-1) < tau = 0; beta = 0.9)")
    assert md[i - 3].startswith("- Run preset: paper (") and md[i + 4] == "- Encoder (decides the triggers): not recorded"
    assert md[i + 5] == "" and "Per cell:" not in md


def _injected_run(tmp_path: Path) -> Path:
    decs = _decs("wwAAR.")
    decs[2]["cosine"] = None  # "always" right after the warm-up: no momentum yet
    inj = {"plan": "poison@4", "injected": 1, "deployed": 1, "blocked": 0, "blocked_steps": []}
    return make_run(tmp_path / "run", "gsm8k", "dc_rs", {
        "dc_rs": {"test_accuracy": 0.5, "decisions": _decs("wwwwww"), "lines": {4: {"injected": "poison",
                                                                                   "deployed": "candidate"}},
                  "summary": {"injections": inj}},
        "dc_rs+janus": {"test_accuracy": 0.5, "triggers": 3, "decisions": decs,
                        "lines": {4: {"injected": "poison", "deployed": "previous"}},
                        "summary": {"injections": {**inj, "deployed": 0, "blocked": 1}}}},
        janus={**JANUS, "trigger": "always"})


def test_timeline_puts_missing_cosines_in_an_na_band_and_marks_injections(tmp_path, captured):
    run = _injected_run(tmp_path)
    r = next(x for x in load_method_runs([run]) if x.janus)
    plots.plot_trigger_timeline(r, tmp_path / "t.png")
    ax = captured[0].axes[0]
    # cosines -0.5, -0.5, 0.5 and tau 0 -> cosine range [-0.6, 0.6]; the n/a band sits 0.168 below it
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "n/a"
    assert round(ax.get_yticks()[0], 6) == -0.768 and round(ax.get_ylim()[0], 4) == -0.9024
    accepted = next(c for c in ax.collections if c.get_label().startswith("triggered: accepted"))
    assert [(int(x), round(float(y), 3)) for x, y in accepted.get_offsets()] == [(3, -0.768), (4, -0.5)]
    inj = [ln for ln in ax.lines if ln.get_label() == "injected candidate (poison)"]
    assert len(inj) == 1 and list(inj[0].get_xdata()) == [4, 4] and inj[0].get_linestyle() == ":"
    label = next(t for t in ax.texts if t.get_text() == "poison")  # above the axes: it covers no point
    assert (label.get_position(), label.get_rotation(), label.get_clip_on()) == ((4, 1.01), 0.0, False)
    captured[0].canvas.draw()
    box, title, axes = (x.get_window_extent() for x in (label, ax.title, ax))
    assert box.y0 >= axes.y1 and title.y0 >= box.y1  # between the axes and the title, overlapping neither


def test_trajectory_keeps_coinciding_curves_and_markers_visible(tmp_path, captured):
    from janus_memory.report.inject_report import plot_trajectories

    run = _injected_run(tmp_path)
    plot_trajectories(load_method_runs([run]), tmp_path / "rep")
    ax = captured[0].axes[0]
    curves = [ln for ln in ax.lines if ln.get_label().startswith("dc_rs")]
    assert [c.get_label() for c in curves] == [
        "dc_rs (final test accuracy 50.0%)", "dc_rs+janus (final test accuracy 50.0%); same curve as dc_rs"]
    assert [(c.get_linewidth(), c.get_linestyle(), c.get_zorder()) for c in curves] == [(3.2, "-", 2), (1.5, "--", 3)]
    marks = [c for c in ax.collections if len(c.get_offsets())]
    assert [(list(c.get_sizes()), c.get_zorder()) for c in marks] == [([170.0], 5), ([45.0], 6)]
    assert [ln.get_label() for ln in ax.lines if list(ln.get_xdata()) == [4, 4]] == ["injected candidate (poison)"]
    # each method's legend entry draws its line and the marker it put on the curve, at that marker's size (the
    # legend used to name "large/small markers" and draw none)
    handles = ax.get_legend().legend_handles
    assert [type(h).__name__ for h in handles[:2]] == ["Line2D", "Line2D"]
    entry = {lab.get_text(): h for lab, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    assert not any("markers" in t for t in entry)
    legend_marks = [a for a in ax.get_legend().findobj(lambda a: type(a).__name__ == "Line2D" and a.get_marker() not in
                                                       (None, "None", "", " "))]
    assert sorted((m.get_marker(), round(m.get_markersize() ** 2)) for m in legend_marks)[:2] == [("s", 45), ("v", 170)]


def test_overhead_has_one_definition_in_console_and_plot(tmp_path, captured):
    from janus_memory.report.summary_table import cost_remarks, janus_overhead

    test = {"calls": 5, "cache_hits": 0, "prompt_tokens": 4500, "completion_tokens": 500}
    base_u = {"solver": {"calls": 10, "cache_hits": 0, "prompt_tokens": 900, "completion_tokens": 100}, "test": test}
    jan_u = {"solver": {"calls": 4, "cache_hits": 6, "prompt_tokens": 360, "completion_tokens": 40,
                        "hit_prompt_tokens": 540, "hit_completion_tokens": 60},
             "janus": {"calls": 8, "cache_hits": 0, "prompt_tokens": 450, "completion_tokens": 50}, "test": test}
    o = janus_overhead(base_u, jan_u)  # test excluded, cache hits included: 1500 vs 1000 stream tokens
    assert (o["base"]["needed_tokens"], o["janus"]["needed_tokens"], o["pct"]) == (1000, 1500, 50.0)
    assert cost_remarks({"dc_rs": {"usage": base_u}, "dc_rs+janus": {"usage": jan_u}})[0] == (
        "Janus overhead: +50.0% tokens over dc_rs without Janus (stream tokens, cache hits included, held-out test "
        "excluded): dc_rs+janus needed 1,500 vs 1,000 for dc_rs (18 vs 10 LLM responses); the whole cost of guarding, "
        "against no guard at all (the README's cost figure is another ratio: the recommended controller's paid "
        "evaluations as a share of an always-compare controller's)")
    make_run(tmp_path / "run", "gsm8k", "dc_rs", {
        "dc_rs": {"test_accuracy": 0.5, "decisions": _decs("wwww"), "summary": {"usage": base_u}},
        "dc_rs+janus": {"test_accuracy": 0.5, "triggers": 0, "decisions": _decs("wwww"), "summary": {"usage": jan_u}}})
    plots.plot_token_overhead(load_method_runs([tmp_path / "run"]), tmp_path / "o.png")
    fig = captured[0]
    assert fig.axes[0].get_title() == "gsm8k / dc_rs seed 0: Janus overhead +50.0%"
    assert fig._suptitle.get_text() == ("Token cost: base vs +Janus (same scale); Janus overhead = extra\n"
                                        "tokens in % of the base's (stream tokens, cache hits included,\n"
                                        "held-out test excluded)")


def test_bench_trajectory_dashes_a_curve_equal_to_an_earlier_one(tmp_path, monkeypatch):
    from janus_memory.bench import plots as bplots
    from janus_memory.bench import replay_plot

    assert bplots.save_figure is plots.save_figure and replay_plot.save_figure is plots.save_figure
    figs = []
    monkeypatch.setattr(bplots, "save_figure", lambda fig, path: figs.append(fig) or Path(path))
    blind = np.array([[0.5, 0.6, 0.7], [0.5, 0.4, 0.3]])
    bplots.plot_trajectory({"blind": blind, "janus": blind + 0.1, "janus-sign": blind.copy()}, tmp_path / "t.png", 1)
    lines = {ln.get_label(): ln for ln in figs[0].axes[0].lines}
    assert list(lines) == ["blind", "janus", "janus-sign (= blind)"]
    assert lines["janus-sign (= blind)"].get_linestyle() == "--" and lines["janus-sign (= blind)"].get_zorder() == 3
    assert lines["blind"].get_linestyle() == "-"
    plt.close("all")


# ------------------------------------------------------------------------------------ legends: only what is drawn
def _legend(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def _injections(tmp_path: Path, janus_deploys: bool) -> Path:
    inj = {"plan": "poison@4", "injected": 1, "deployed": 1, "blocked": 0, "blocked_steps": []}
    return make_run(tmp_path / "run", "gsm8k", "dc_rs", {
        "dc_rs": {"test_accuracy": 0.5, "decisions": _decs("wwwwww"),
                  "lines": {4: {"injected": "poison", "deployed": "candidate"}}, "summary": {"injections": inj}},
        "dc_rs+janus": {"test_accuracy": 0.5, "triggers": 2, "decisions": _decs("ww.A.."),
                        "lines": {4: {"injected": "poison", "deployed": "candidate" if janus_deploys else "previous"}},
                        "summary": {"injections": inj if janus_deploys else {**inj, "deployed": 0, "blocked": 1}}}})


@pytest.mark.parametrize("janus_deploys, entries", [
    (True, ["injected candidate (poison)", "injected candidate deployed"]),
    (False, ["injected candidate (poison)", "injected candidate deployed", "injected candidate blocked"]),
])
def test_trajectory_legend_lists_only_the_marks_drawn(tmp_path, captured, janus_deploys, entries):
    from janus_memory.report.inject_report import plot_trajectories

    plot_trajectories(load_method_runs([_injections(tmp_path, janus_deploys)]), tmp_path / "rep")
    legend = _legend(captured[0])
    assert legend[2:] == entries
    drawn = {tuple(c.get_facecolor()[0][:3]) for c in captured[0].axes[0].collections if len(c.get_offsets())}
    assert ((0.17254901960784313, 0.6274509803921569, 0.17254901960784313) in drawn) is (not janus_deploys)


def test_timeline_and_overhead_legends_have_no_entry_for_nothing(tmp_path, captured):
    run = make_run(tmp_path / "run", "gsm8k", "dc_rs", {
        "dc_rs": {"test_accuracy": 0.5, "decisions": _decs("wwww")},
        "dc_rs+janus": {"test_accuracy": 0.5, "triggers": 0, "decisions": _decs("ww..")}})
    rows = load_method_runs([run])
    plots.plot_trigger_timeline(next(r for r in rows if r.janus), tmp_path / "t.png")
    assert _legend(captured[0]) == ["cos(z_t, m_{t-1})", "τ = 0", "warm-up (2)"]  # no "(0)" accepted / rolled back
    plots.plot_token_overhead(rows, tmp_path / "o.png")
    assert _legend(captured[1]) == ["dc_rs", "dc_rs+janus (total)"]  # no Janus evaluation band: it evaluated nothing


def test_replay_timeline_legend_has_no_fired_entry_when_nothing_fired(tmp_path, monkeypatch):
    from janus_memory.bench import replay_plot

    figs = []
    monkeypatch.setattr(replay_plot, "save_figure", lambda fig, path: figs.append(fig) or Path(path))
    rec = [{"step": s, "cosine": 0.1 * s, "destructive": None, "fired": False} for s in (1, 2, 3)]
    replay_plot.plot_timeline(tmp_path / "t.png", "traj", {("traj", "hashing", "memory", "mmt", 2): rec}, ["hashing"], 2)
    assert _legend(figs[0]) == ["cos(z_t, m_t-1)", "tau = 0"]
    rec[2]["fired"] = True
    replay_plot.plot_timeline(tmp_path / "t.png", "traj", {("traj", "hashing", "memory", "mmt", 2): rec}, ["hashing"], 2)
    assert _legend(figs[1]) == ["cos(z_t, m_t-1)", "tau = 0", "MMT fired"]
    plt.close("all")


def test_the_timeline_shows_each_comparison_s_evaluation_set_scores_below_the_cosines(tmp_path, captured):
    """Every trigger policy's timeline shows what Janus decided: per comparison the old memory's score (grey
    circle) and the candidate's (green up when deployed, red down when rolled back), joined by a line."""
    decs = _decs("ww.AR.")
    decs[3].update(old_score=0.5, new_score=0.75)
    decs[4].update(old_score=0.75, new_score=0.25)
    run = make_run(tmp_path / "run", "gsm8k", "dc_rs", {"dc_rs+janus": {"test_accuracy": 0.5, "triggers": 2,
                                                                          "decisions": decs}})
    plots.plot_trigger_timeline(next(r for r in load_method_runs([run]) if r.janus), tmp_path / "t.png")
    fig = captured[0]
    assert len(fig.axes) == 2
    e = fig.axes[1]
    assert [t.get_text() for t in e.get_legend().get_texts()] == [
        "E score: old memory (ring)", "E score: candidate, deployed", "E score: candidate, rolled back"]
    points = [[tuple(p) for p in c.get_offsets()] for c in e.collections if len(c.get_offsets())]
    assert points == [[(4.0, 0.5), (5.0, 0.75)], [(4.0, 0.75)], [(5.0, 0.25)]]
    ring = e.collections[0]  # hollow and painted last: a candidate's triangle at the same score shows inside it
    assert ring.get_facecolor().size == 0 or ring.get_facecolor()[0][3] == 0
    assert ring.get_zorder() > max(c.get_zorder() for c in e.collections[1:])
    assert min(ring.get_sizes()) > max(max(c.get_sizes()) for c in e.collections[1:])  # a ring around the triangle


def test_a_run_without_any_cosine_gets_the_evaluation_set_panel_alone(tmp_path, captured):
    """Like the demo's `trigger always` run: warm-up, then one comparison without a cosine. The timeline is not an empty
    cosine band: one panel with the comparison's scores."""
    decs = _decs("wwwwR")
    decs[4].update(cosine=None, old_score=2 / 3, new_score=0.0)
    run = make_run(tmp_path / "run", "gsm8k", "dc_rs", {"dc_rs+janus": {"test_accuracy": 0.5, "triggers": 1,
                                                                          "decisions": decs}})
    plots.plot_trigger_timeline(next(r for r in load_method_runs([run]) if r.janus), tmp_path / "t.png")
    fig = captured[0]
    assert len(fig.axes) == 1
    assert fig.axes[0].get_title().startswith("Janus's comparisons: dc_rs+janus on gsm8k")
    assert _legend(fig) == ["E score: old memory (ring)", "E score: candidate, rolled back", "warm-up (2)"]  # make_run: 2


def test_the_trajectory_legend_sits_below_the_curves(tmp_path, captured):
    from janus_memory.report.inject_report import plot_trajectories

    plot_trajectories(load_method_runs([_injections(tmp_path, False)]), tmp_path / "rep")
    fig = captured[0]
    fig.canvas.draw()
    ax, legend = fig.axes[0], fig.axes[0].get_legend()
    assert legend.get_window_extent().y1 < ax.get_window_extent().y0  # wholly under the axes: covers no data


def test_a_report_of_runs_without_janus_does_not_say_the_encoder_decides_triggers():
    from janus_memory.report.report import setup_fields

    fields = setup_fields({"preset": "paper", "encoder": "hashing"}, [])
    assert fields["Encoder (the updater's retrieval; no controller)"].startswith("hashing: scikit-learn")
    assert "Encoder (decides the triggers)" not in fields
