"""Figures: a method's colour does not depend on which others a figure shows; log axes read
as plain numbers; seeds become one seaborn band per method; saved as PNG and PDF with a title
naming the paper's figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from thinwire import plots  # noqa: E402
from thinwire.experiment import RunConfig, run  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _own_style():
    """The style a test sets (``use_style``, ``figure_folder``) ends with it: other tests in
    the same process draw with matplotlib's defaults."""
    with plt.rc_context():
        yield


TINY = dict(model="mlp(hidden=(16,))", steps=6, train_samples=512, eval_every=2, eval_samples=200, batch_size=16)


def test_a_method_keeps_its_colour_across_figures(tmp_path):
    assert plots.color("Slim-DP (0.3, 0.15)") == plots.color("Slim-DP (0.3, 0.15), K = 8") != plots.color("Quant-DP")
    assert plots.color("some new method") == plots.color("some new method")
    fig, (a, b) = plt.subplots(1, 2)
    results = {m: run(RunConfig(**TINY, seed=s), root=tmp_path) for s, m in enumerate(["Plump-DP", "Quant-DP"])}
    plots.curves(results, "loss", ax=a)
    plots.curves({"Quant-DP": results["Quant-DP"]}, "loss", ax=b)  # Plump-DP left out
    assert a.lines[1].get_color() == b.lines[0].get_color() == plots.color("Quant-DP")
    plt.close(fig)


def test_log_axes_read_as_plain_numbers():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [0.5, 2, 300])
    plots.log_axis(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels(minor=False) + ax.get_yticklabels(minor=True) if t.get_text()]
    assert labels and not any("times" in t or "^" in t for t in labels)
    plt.close(fig)


def test_seeds_are_a_band_and_figures_are_saved_titled_in_two_formats(tmp_path):
    runs = {"Plump-DP": [run(RunConfig(**TINY, seed=s), root=tmp_path) for s in range(2)]}
    fig, ax = plt.subplots()
    plots.band(runs, "test_accuracy", ax=ax)
    assert len(ax.collections) == 1 and ax.lines[0].get_color() == plots.color("Plump-DP")
    path = plots.save(fig, "slim_dp_fig3_time", tmp_path, "smoke")
    assert path.name == "slim_dp_fig3_time_smoke.png" and path.with_suffix(".pdf").exists()
    assert fig._suptitle.get_text() == ("Slim-DP (Sun et al. 2018), Fig. 3: time\n"
                                        "MNIST, mlp(hidden=(16,)), 4 workers x batch 16, 6 steps, seeds 0, 1")
    plt.close(fig)


def test_seed_boxes_take_their_method_colour():
    from matplotlib.colors import to_hex
    fig, ax = plt.subplots()
    plots.boxes({"Plump-DP": [0.9, 0.91, 0.92], "Quant-DP": [0.89, 0.9, 0.93]}, ax=ax, ylabel="accuracy")
    faces = [to_hex(p.get_facecolor(), keep_alpha=False) for p in ax.patches]
    assert faces[:2] == [plots.color("Plump-DP").lower(), plots.color("Quant-DP").lower()]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Plump-DP", "Quant-DP"]
    plt.close(fig)


def test_figures_go_to_a_named_folder_the_setup_cell_prints(tmp_path, monkeypatch, capsys):
    from thinwire import plots
    monkeypatch.delenv("THINWIRE_FIGURES", raising=False)
    monkeypatch.setenv("THINWIRE_REPORTS", str(tmp_path))
    assert plots.figure_folder("smoke") == tmp_path / "figures" / "smoke"
    assert plots.figure_folder("default") == tmp_path / "figures"
    assert capsys.readouterr().out.splitlines() == [f"figures: {tmp_path / 'figures' / 'smoke'}",
                                                    f"figures: {tmp_path / 'figures'}"]


def test_no_colour_twice_in_a_panel_and_small_multiples_beyond_the_palette():
    labels = ["Plump-DP", "Quant-DP", *[f"method {i}" for i in range(11)]]  # 13: hashes collide among them
    chosen = plots.colors(labels)
    assert len(set(chosen.values())) == len(labels) == len(plots.PALETTE)
    assert chosen["Plump-DP"] == plots.color("Plump-DP") and chosen["Quant-DP"] == plots.color("Quant-DP")
    with pytest.raises(ValueError, match="14 labels in one panel.*small multiples"):
        plots.colors([*labels, "one more"])
    panels = plots.groups([f"m{i}" for i in range(19)])
    assert [len(p) for p in panels] == [10, 9] and sum(panels, []) == [f"m{i}" for i in range(19)]
    assert plots.groups(labels) == [labels]
    from thinwire.papers.compare.profiles import DEFAULT_METHODS
    assert len(set(plots.colors(DEFAULT_METHODS).values())) == len(DEFAULT_METHODS)
    from thinwire.papers.eventgrad import LABELS as EVENTGRAD
    from thinwire.papers.mqgrad import LABELS as MQGRAD
    for shown in (DEFAULT_METHODS, EVENTGRAD, MQGRAD):  # notebooks that colour with color() alone: no collision
        assert len({plots.color(m) for m in shown}) == len(shown), shown


def test_coinciding_curves_stay_visible_and_a_long_loss_is_smoothed(tmp_path):
    """Two identical runs under two labels: different dashes and markers; 40 steps of loss:
    a faint raw line under each smoothed one; one legend for the figure; a two-line title
    naming the setup, larger than the tick labels."""
    from matplotlib.colors import to_hex
    config = RunConfig(**{**TINY, "steps": 40, "eval_every": 20})
    same = run(config, root=tmp_path)
    plots.use_style()
    fig, (a, b) = plt.subplots(1, 2)
    plots.curves({"Plump-DP": same, "Quant-DP": same}, "loss", ax=a)
    plots.curves({"Plump-DP": same, "Quant-DP": same}, "test_accuracy", ax=b)
    raw, smooth = [line for line in a.lines if line.get_alpha() == 0.2], [line for line in a.lines if line.get_label()[0] != "_"]
    assert len(raw) == 2 and len(smooth) == 2
    assert smooth[0].get_linestyle() != smooth[1].get_linestyle() and smooth[0].get_marker() != smooth[1].get_marker()
    assert to_hex(raw[1].get_color()) == to_hex(smooth[1].get_color()) == plots.color("Quant-DP").lower()
    assert abs(smooth[0].get_ydata().std()) < raw[0].get_ydata().std()
    assert len(b.lines) == 2  # accuracy at 2 points: not smoothed
    plots.legend(fig)
    assert len(fig.legends) == 1 and a.get_legend() is None and b.get_legend() is None
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Plump-DP", "Quant-DP"]
    plots.save(fig, "quickstart_steps", tmp_path, "smoke")  # the setup of the runs curves drew
    assert fig._suptitle.get_text() == ("Quickstart, steps\nMNIST, mlp(hidden=(16,)), 4 workers x batch 16, "
                                        "40 steps, seed 0")
    assert fig._suptitle.get_fontsize() > a.get_xticklabels()[0].get_fontsize()
    plt.close(fig)


def test_a_setup_line_names_what_the_runs_share_and_the_values_where_they_differ():
    runs = [RunConfig(**TINY, workers=k, seed=s) for k in (8, 4) for s in (1, 0)]
    assert plots.setup_line(runs) == "MNIST, mlp(hidden=(16,)), 4, 8 workers x batch 16, 6 steps, seeds 0, 1"
    assert plots.setup_line(runs[:1], "lr 0.1", seeds=False) == "MNIST, mlp(hidden=(16,)), 8 workers x batch 16, 6 steps, lr 0.1"
    assert plots.setup_line([]) == ""
