"""Figures: a method's colour does not depend on which others a figure shows; log axes read
as plain numbers; seeds become one seaborn band per method; saved as PNG and PDF with a title
naming the paper's figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from thinwire import plots  # noqa: E402
from thinwire.experiment import RunConfig, run  # noqa: E402

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
    assert fig._suptitle.get_text() == "Slim-DP (Sun et al. 2018), Fig. 3: time"
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
