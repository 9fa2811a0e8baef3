"""The HTML report as a person reads it: each test pins one defect seen in a headless browser's
screenshot of a report (histograms, tick labels, legends, the privacy table's readings, the caveats
box, the page at 800 px)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.schema import Column, Schema
from synthzoo.metrics.html import (_caveat_text, _column_figures, _column_plots, _compact, _table, _verdict,
                                   write_html_report)


def _figures(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> dict:
    import matplotlib.pyplot as plt
    out = {}
    for name, fig, note in _column_figures(real, synth, schema):
        fig.canvas.draw()
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        out[name] = dict(note=note, ticks=[t.get_text() for t in ax.get_xticklabels() if t.get_text()],
                         xlim=ax.get_xlim(), scale=ax.get_xscale(), bars=[p for p in ax.patches], ax=ax,
                         legend_box=ax.get_legend().get_window_extent(renderer),
                         axes_box=ax.get_window_extent(renderer))
        plt.close(fig)
    return out


@pytest.fixture(scope="module")
def columns():
    """adult-like columns: capital-gain (91 % zeros, the rest spread over 100 to 100,000), a 1-5
    rating whose mode holds half the rows, an income in the hundreds of thousands, a signup date."""
    n = 2000

    def draw(seed):
        g = np.random.default_rng(seed)
        gain = np.where(g.random(n) < 0.91, 0.0, np.round(np.exp(g.uniform(np.log(114), np.log(99999), n))))
        rating = g.choice([1, 2, 3, 4, 5], n, p=[.05, .1, .2, .5, .15])
        income = np.round(g.lognormal(np.log(60000), 0.6, n))
        day = pd.Timestamp("2017-01-01") + pd.to_timedelta(g.integers(0, 8 * 365, n), unit="D")
        hours = np.where(g.random(n) < 0.47, 40, np.clip(np.round(g.normal(40, 14, n)), 1, 99))
        edu = np.where(g.random(n) < 0.32, 9, g.integers(1, 17, n))
        return pd.DataFrame({"capital_gain": gain, "rating": rating, "income": income, "signup": day,
                             "hours": hours, "edu": edu})

    schema = Schema([Column("capital_gain", "numerical", lower=0, upper=99999, integer=True),
                     Column("rating", "numerical", lower=1, upper=5, integer=True),
                     Column("income", "numerical", lower=0, upper=2_000_000),
                     Column("signup", "datetime", lower="2017-01-01", upper="2024-12-31"),
                     Column("hours", "numerical", lower=1, upper=99, integer=True),
                     Column("edu", "numerical", lower=1, upper=16, integer=True)])
    return draw(1), draw(2), schema


def test_zero_inflated_column_drops_its_spike_and_spreads_the_rest_on_a_log_axis(columns):
    real, synth, schema = columns
    f = _figures(real, synth, schema)["capital_gain"]
    # the 0 held by 91 % of the rows is a share in the caption, not a bar that flattens the rest
    assert re.match(r"= 0: real 9\d%, synthetic 9\d% \(not drawn\)", f["note"]), f["note"]
    assert f["xlim"][0] > 0 and f["scale"] == "log"
    # compact tick labels (1k, 10k), never "10000" or matplotlib's 10^4 mathtext
    assert f["ticks"] and all(len(t) <= 5 and "$" not in t for t in f["ticks"]), f["ticks"]


def test_a_rating_keeps_its_mode_as_a_bar(columns):
    # a 1-5 rating whose 4 held half the rows lost that bar to the spike rule ("share of the rows != 4")
    real, synth, schema = columns
    f = _figures(real, synth, schema)["rating"]
    assert "not drawn" not in f["note"]
    assert f["ax"].get_ylabel() == "share of rows"
    filled = [p for p in f["bars"] if p.get_fill()]
    assert len(filled) == 5 and max(p.get_height() for p in filled) == pytest.approx(np.mean(real["rating"] == 4))


def test_a_mode_inside_the_range_keeps_its_bar(columns):
    # hours-per-week's 40 (47 % of the rows) and education-num's 9 (32 %, among 16 levels) were left
    # out as spikes: a hole in the middle of the histogram and "share of the rows != 40" on its axis
    real, synth, schema = columns
    figs = _figures(real, synth, schema)
    for name, mode in (("hours", 40), ("edu", 9)):
        f = figs[name]
        assert "not drawn" not in f["note"] and f["ax"].get_ylabel() == "share of rows", name
        filled = [p for p in f["bars"] if p.get_fill()]
        at = [p for p in filled if p.get_x() <= mode <= p.get_x() + p.get_width()]
        assert at and at[0].get_height() == max(p.get_height() for p in filled), name
    # kept, the 40 flattened the rest of the histogram to a sixth of its height: it is cut off at the
    # top, its shares written on it and in the caption
    f = figs["hours"]
    filled = [p for p in f["bars"] if p.get_fill()]
    heights = sorted(p.get_height() for p in filled)
    assert f["ax"].get_ylim()[1] < heights[-1] and f["ax"].get_ylim()[1] >= heights[-2]
    cut = re.search(r"the bar (?:at (\d+)|(\d+)-(\d+)) is cut off at the top: real [45]\d%, synthetic [45]\d%",
                    f["note"])
    assert cut, f["note"]
    lo, hi = (int(cut[1]), int(cut[1])) if cut[1] else (int(cut[2]), int(cut[3]))
    assert lo <= 40 <= hi and hi - lo <= 3  # the bin that holds the 40, said as the values it holds
    assert any(re.fullmatch(r"[45]\d% / [45]\d%", t.get_text()) for t in f["ax"].texts)
    assert "cut off" not in figs["rating"]["note"]  # .5 beside .2: no bar flattens the rest


def test_whole_numbers_over_a_wide_range_get_bins_of_whole_values(columns):
    # 40 equal bins over 1-99 held 2 or 3 integers each: a comb of alternate heights not in the data
    real, synth, schema = columns
    filled = [p for p in _figures(real, synth, schema)["hours"]["bars"] if p.get_fill()]
    widths = {round(p.get_width(), 9) for p in filled}
    assert len(widths) == 1 and float(widths.pop()).is_integer()
    assert all(float(p.get_x() - 0.5).is_integer() for p in filled)  # edges between integers


def test_a_small_table_gets_few_wide_bins(columns):
    # 40 bins over a 30-row table drew a comb of single rows (signup_date, income of make_demo(30))
    real, synth, schema = columns
    figs = _figures(real.head(30), synth.head(30), schema)
    for name in ("income", "signup"):
        filled = [p for p in figs[name]["bars"] if p.get_fill()]
        assert 10 <= len(filled) <= 11, (name, len(filled))  # 2 sqrt(30) = 11
    assert len([p for p in _figures(real, synth, schema)["income"]["bars"] if p.get_fill()]) == 40


def test_extreme_values_are_left_out_and_counted_not_piled_into_the_end_bins(columns):
    real, synth, schema = columns
    real = real.copy()
    real.loc[:19, "income"] = 1_900_000  # 1 % of the rows far out in the tail
    f = _figures(real, synth, schema)["income"]
    filled = [p for p in f["bars"] if p.get_fill()]
    # the last bin holds no pile of the clipped tail: it is no taller than the median bin
    assert filled[-1].get_height() <= np.median([p.get_height() for p in filled]) + 1e-12
    assert re.search(r"\d\.\d% of values \(the extreme tails\) beyond the plotted range, \S+ to \S+", f["note"])
    assert sum(p.get_height() for p in filled) < 1.0  # the bars hold only what lies in range


def test_large_numbers_read_compactly_and_dates_as_dates(columns):
    real, synth, schema = columns
    figs = _figures(real, synth, schema)
    # income's axis read "0 50000 100000 ... 350000", the labels touching
    assert figs["income"]["ticks"] and all(re.fullmatch(r"-?[\d.]+k?", t) for t in figs["income"]["ticks"]), \
        figs["income"]["ticks"]
    assert any(t.endswith("k") for t in figs["income"]["ticks"])
    # a datetime column's axis read "1.50 1.55 ... 1.70" times 1e9 (its epoch seconds)
    assert figs["signup"]["ticks"] and all(re.fullmatch(r"20\d\d", t) for t in figs["signup"]["ticks"]), \
        figs["signup"]["ticks"]
    assert _compact(350000) == "350k" and _compact(1.5e6) == "1.5M" and _compact(-124.3) == "-124"


def test_legends_sit_above_the_plot_not_over_its_bars(columns):
    real, synth, schema = columns
    for name, f in _figures(real, synth, schema).items():
        assert f["legend_box"].y0 >= f["axes_box"].y1 - 1, name  # over the axes' top edge, where no bar is drawn


def test_the_report_page_fits_800_px_and_says_what_the_colours_are(columns, tmp_path):
    real, synth, schema = columns
    table = pd.DataFrame([
        {"metric": "tvd_2way", "group": "fidelity", "value": 0.1, "HALF": 0.05, "INDEPENDENT": 0.3, "SELF": 0.0,
         "better": "lower", "description": "d"},
        {"metric": "dcr_risk", "group": "privacy", "value": 0.02, "ci_low": np.nan, "ci_high": np.nan, "HALF": 0.0,
         "INDEPENDENT": 0.0, "SELF": 1.0, "better": "lower", "description": "d"}])
    text = write_html_report(tmp_path / "r.html", table, real, synth, schema).read_text()
    # wide plots shrink to the window (the heatmap's colour bar was cut off at 800 px) ...
    assert re.search(r"img\{[^}]*max-width:100%", text)
    # ... two column plots a row below 1000 px (one a row left half the page blank at 800 px) ...
    assert re.search(r"@media \(max-width:1000px\)\{\.grid figure\{width:calc\(50% - 5px\)\}\}", text)
    # ... and every metric table scrolls inside its own box instead of running off the page
    assert text.count("<table>") == text.count("<div class='scroll'><table>") == 2
    assert re.search(r"\.scroll\{[^}]*overflow-x:auto", text)
    # in the box the description column was squeezed to a word a line, cut at the box's edge: the
    # reading and description columns keep a width, and the box scrolls sideways past them
    assert re.search(r"td\.reading\{min-width:\d+em\}", text) and re.search(r"td\.desc\{min-width:\d+em\}", text)
    assert text.count("<td class='muted desc'>") == 2 and text.count("<td class='reading'>") == 2
    assert "sup{line-height:0}" in text  # the R mark does not push its metric's name below the row's numbers
    # the heading said "real filled, synthetic outlined", but categories are side-by-side filled bars
    assert "real filled, synthetic outlined" not in text
    assert "Real rows in blue, synthetic in orange" in text
    assert " -- " not in text  # the top box's dashes are typographic
    # the zero-inflated column's caption is on the page
    assert re.search(r"<figcaption>= 0: real 9\d%, synthetic 9\d% \(not drawn\)", text)
    assert all(len(p) == 3 for p in _column_plots(real.head(50), synth.head(50), schema))


def test_caveats_box_reads_as_a_sentence_of_the_page(tmp_path):
    from synthzoo.datasets import make_demo

    df, schema = make_demo(60, seed=0)
    table = pd.DataFrame([{"metric": "tvd_2way", "group": "fidelity", "value": 0.1, "HALF": 0.05,
                           "INDEPENDENT": 0.3, "SELF": 0.0, "better": "lower", "description": "d"}])
    caveat = ("evaluate: only 30 training rows (fewer than 40): each is 3.33 % of every membership rate and AUC; "
              "the values are mostly noise")
    text = write_html_report(tmp_path / "r.html", table, df.head(30), df.tail(30), schema,
                             details={"caveats": [caveat]}).read_text()
    # it read "Read with care. evaluate: only 30 training rows ... noise" (a warning's prefix, no full stop)
    assert "<b>Read with care.</b> Only 30 training rows (fewer than 40)" in text
    assert "mostly noise.</p>" in text and "evaluate: only" not in text
    # the box comes before the first metric table
    assert text.index("Read with care") < text.index("<table>")
    assert _caveat_text("a holdout of 12 rows.") == "A holdout of 12 rows."


def _privacy(**row):
    base = {"group": "privacy", "ci_low": np.nan, "ci_high": np.nan, "INDEPENDENT": 0.0, "SELF": 1.0,
            "better": "lower", "description": "d"}
    return {**base, **row}


def test_a_negative_risk_reads_as_no_leak_and_risks_are_marked_r():
    # inference risk -.09 with HALF -.5 read "some leakage (27 % of the way to a copy)", beside a note
    # saying a negative R reads as 0
    r = _privacy(metric="inference_risk", value=-0.09, HALF=-0.5, ci_low=-0.2, ci_high=0.05)
    assert _verdict(r) == "like a non-member release (R below 0 reads as 0)"
    assert _verdict({**r, "metric": "dcr_risk", "ci_low": np.nan, "ci_high": np.nan}) == \
        "like a non-member release (R below 0 reads as 0)"
    # an AUC is no R: below its HALF it is not "R below 0"
    auc = _privacy(metric="domias_auc", value=0.49, HALF=0.5)
    assert "R below 0" not in _verdict(auc)
    text = "".join(_table(pd.DataFrame([r, auc])))
    # the note says "risks marked R": the R rows carry the mark, the AUC does not
    assert "<b>inference_risk</b>&nbsp;<sup title='normalised risk R'>R</sup>" in text
    assert "<b>domias_auc</b></td>" in text


def test_a_risk_with_a_wide_interval_reads_as_too_uncertain():
    # 30 training rows: inference risk's 95 % CI ran from -.79 to .61 and the reading named a leak
    r = _privacy(metric="inference_risk", value=0.2, HALF=-0.5, ci_low=-0.79, ci_high=0.61)
    assert _verdict(r).startswith("too uncertain to read (95 % CI -0.79 to 0.61")
    # a narrow interval still gets its reading
    assert _verdict({**r, "ci_low": 0.15, "ci_high": 0.25}).startswith("some leakage")


def test_the_heatmap_writes_each_pair_once():
    # the symmetric matrix wrote every difference twice (210 numbers for adult's 15 columns)
    import matplotlib.pyplot as plt

    from synthzoo.datasets import make_demo
    from synthzoo.metrics.html import _heatmap_figure

    real, schema = make_demo(300, seed=0)
    synth, _ = make_demo(300, seed=1)
    fig = _heatmap_figure(real, synth, schema)
    n = len(schema)
    ax = fig.axes[0]
    numbers = [t.get_text() for t in ax.texts]
    rows, cols = [t.get_text() for t in ax.get_yticklabels()], [t.get_text() for t in ax.get_xticklabels()]
    plt.close(fig)
    assert len(numbers) == n * (n - 1) // 2
    # no row or column without a cell: the first column has no pair above it, the last none to its right
    assert rows == schema.names[1:] and cols == schema.names[:-1]
    assert all(re.fullmatch(r"\.\d\d|1", t) for t in numbers), numbers


def test_small_table_values_read_in_decimals():
    from synthzoo.metrics.html import _fmt
    assert _fmt(-0.0005) == "-0.0005" and _fmt(0.0) == "0" and _fmt(3e-6) == "3.00e-06"
    assert _fmt(89534.9489) == "89,535" and _fmt(-120800.04) == "-120,800" and _fmt(0.4452) == "0.4452"


def test_the_notes_are_linked_from_the_sections_line(tmp_path):
    from synthzoo.datasets import make_demo
    from synthzoo.metrics.html import timing_notes

    df, schema = make_demo(60, seed=0)
    table = pd.DataFrame([{"metric": "tvd_2way", "group": "fidelity", "value": 0.1, "HALF": 0.05,
                           "INDEPENDENT": 0.3, "SELF": 0.0, "better": "lower", "description": "d"}])
    notes = timing_notes({"synthetic": 3.0, "HALF": 2.0}, wall=4.0)
    text = write_html_report(tmp_path / "r.html", table, df.head(30), df.tail(30), schema, notes=notes).read_text()
    sections = re.search(r"Sections: (.*?)</p>", text).group(1)
    assert "<a href='#notes'>notes</a>" in sections and "<h2 id='notes'>" in text
    assert "time (synthetic, summed over its units)</b>: 3.0 s" in text
    assert "#notes" not in write_html_report(tmp_path / "s.html", table, df.head(30), df.tail(30), schema).read_text()


@pytest.fixture(scope="module")
def countries():
    """native-country as in adult: 42 categories, one of them 90 % of the rows, a long name among the rare."""
    cats = ["United-States"] + [f"country-{i:02d}" for i in range(40)] + ["Outlying-US(Guam-USVI-etc)"]
    p = np.r_[0.9, np.linspace(0.02, 0.0005, 41)]
    p /= p.sum()
    schema = Schema([Column("country", "categorical", categories=cats)])

    def draw(seed, probs):
        return pd.DataFrame({"country": np.random.default_rng(seed).choice(cats, 5000, p=probs)})
    q = p.copy()
    q[-1] = 0.01  # the release inflates the rarest category (.05 % of the real rows) twentyfold
    q /= q.sum()
    return draw(1, p), draw(2, q), schema


def test_a_dominant_category_is_cut_off_and_the_rest_are_readable(countries):
    real, synth, schema = countries
    f = _figures(real, synth, schema)["country"]
    ax = f["ax"]
    heights = sorted(p.get_height() for p in f["bars"])  # real and synthetic
    top = ax.get_ylim()[1]
    # beside United-States at .9 the next bar filled 2 % of the axis: now the axis ends just above it
    assert heights[-2] > top >= heights[-3] and heights[-3] >= 0.7 * top
    # the cut bar's shares are written on the plot and in the caption, and it carries a break mark
    us = np.mean(real["country"] == "United-States")
    assert any(t.get_text().startswith(f"{us:.0%} / ") for t in ax.texts)
    assert f["note"].startswith(f"United-States is cut off at the top: real {us:.0%}, synthetic ")
    assert [ln for ln in ax.lines if ln.get_gid() == "cut-mark"]
    # the written shares sit right of the bar pair, on no bar of it
    import matplotlib.pyplot as plt
    ((_, fig, _),) = _column_figures(real, synth, schema)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    text = [t for t in ax.texts if "/" in t.get_text()][0].get_window_extent(renderer)
    pair = [p.get_window_extent(renderer) for p in ax.patches if p.get_height() > top]
    plt.close(fig)
    assert len(pair) == 2 and text.x0 >= max(b.x1 for b in pair)


def test_categories_left_out_are_counted_with_their_share_of_the_rows(countries):
    real, synth, schema = countries
    f = _figures(real, synth, schema)["country"]
    shown = set(f["ticks"])
    assert len(shown) == 20
    hidden = [c for c in schema["country"].categories if c not in shown and c[:17] + "\u2026" not in shown]
    r, s = (np.mean(d["country"].isin(hidden)) for d in (real, synth))
    # it said "22 rarer categories not shown", not what share of the rows they hold
    m = re.search(r"(\d+) of (\d+) categories not shown, holding real ([\d.<]+%), synthetic ([\d.<]+%) of the rows",
                  f["note"])
    assert m, f["note"]
    assert (int(m[1]), int(m[2])) == (len(hidden), 42)
    for said, share in ((m[3], r), (m[4], s)):  # whole percents from 10 %, tenths below
        assert abs(float(said.strip("<%")) - 100 * share) <= (0.5 if "." not in said else 0.05) + 1e-9, (said, share)
    # a category the release inflated is shown though the real rows barely hold it, its name cut with an ellipsis
    assert "Outlying-US(Guam-\u2026" in shown


@pytest.fixture(scope="module")
def mia():
    """Two attacks on 1,000 members and 1,000 non-members: one with untied scores, one with few integer
    scores (dcr_hamming's distances: large blocks of ties)."""
    from synthzoo.metrics.mia import _summarise
    g = np.random.default_rng(0)
    y = np.r_[np.ones(1000, bool), np.zeros(1000, bool)]
    scores = {"smooth": g.normal(size=2000) + 0.3 * y, "tied": -np.round(g.uniform(0, 4, 2000) - 0.2 * y)}
    return _summarise(y, scores, return_scores=True)


def test_the_low_fpr_panel_draws_what_the_table_reads(mia):
    # the log panel drew a block of tied scores as a straight slope above the blind guess, where the
    # table's TPR at 1 % FPR (the largest TPR a threshold reaches at that FPR) said 0
    import matplotlib.pyplot as plt
    from matplotlib.cbook import STEP_LOOKUP_MAP

    from synthzoo.metrics.html import _roc_figure
    table, det = mia
    fig = _roc_figure(mia)
    log_ax = fig.axes[1]
    assert log_ax.get_xscale() == "log"
    for line, (name, _) in zip(log_ax.lines, det["roc"].items()):
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        style = line.get_drawstyle()
        if style != "default":
            x, y = STEP_LOOKUP_MAP[style](x, y)
        drawn = np.interp(0.01, x, y)  # what the eye reads along the drawn path at 1 % FPR
        assert drawn == pytest.approx(float(table.loc[table["attack"] == name, "tpr@0.01"].iloc[0]), abs=1e-9), name
    plt.close(fig)


def test_the_roc_legend_covers_no_curve_and_its_text_is_readable(mia):
    import matplotlib.pyplot as plt

    from synthzoo.metrics.html import _roc_figure
    fig = _roc_figure(mia)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    # it sat in the linear panel's lower right corner, where a curve below the diagonal runs
    legends = fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
    assert len(legends) == 1
    box = legends[0].get_window_extent(r)
    assert all(not box.overlaps(ax.get_window_extent(r)) for ax in fig.axes)
    # 7 pt legend text read 9 px at 100 %: every text of the figure is at least 9 pt
    texts = [t for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()
             + [ax.xaxis.label, ax.yaxis.label, ax.title] if t.get_text()] + legends[0].get_texts()
    assert texts and min(t.get_fontsize() for t in texts) >= 9
    plt.close(fig)


def test_the_attack_table_names_the_attack_behind_each_maximum(mia):
    from synthzoo.metrics.html import _mia_table
    table, _ = mia
    text = _mia_table(table)
    # the row read "max (smooth)" beside a TPR the tied attack reached
    assert "max (" not in text
    row = re.search(r"<tr><td><b>max over attacks</b></td>(.*?)</tr>", text).group(1)
    each = table[~table["attack"].str.startswith("max")].set_index("attack")
    named = re.findall(r"\((\w+)\)</span>", row)
    assert named == [each[c].idxmax() for c in ("auc", "tpr@0.01", "tpr@0.001")]


def test_the_attack_section_says_how_few_rows_the_low_fpr_numbers_rest_on(mia, tmp_path):
    from synthzoo.datasets import make_demo
    df, schema = make_demo(60, seed=0)
    table = pd.DataFrame([{"metric": "tvd_2way", "group": "fidelity", "value": 0.1, "HALF": 0.05,
                           "INDEPENDENT": 0.3, "SELF": 0.0, "better": "lower", "description": "d"}])
    text = write_html_report(tmp_path / "r.html", table, df.head(30), df.tail(30), schema,
                             details={"mia": mia}).read_text()
    # TPR at 0.1 % FPR of 1,000 non-members is one false alarm: the page said nothing of it
    assert "(1,000 members, 1,000 non-members scored)" in text
    assert "Of 1,000 non-members, 1 % FPR is 10 false alarms and 0.1 % 1 false alarm" in text


def _risk_frame(models: dict) -> pd.DataFrame:
    """A risk-response table as bench_risk.py writes it: metrics x (risk model, level)."""
    g = np.random.default_rng(0)
    cols = pd.MultiIndex.from_tuples([(m, float(v)) for m, levels in models.items() for v in levels],
                                     names=["risk_model", "level"])
    metrics = ["dcr_risk", "identical_match_risk", "domias_auc", "mia_tpr_1pct", "canary_exposure"]
    df = pd.DataFrame(g.random((len(metrics), len(cols))), index=metrics, columns=cols)
    df.loc["identical_match_risk", [c for c in cols if c[0] != "leaky"]] = 0.0  # two models' curves coincide
    return df


RISK = {"leaky": (0, .2, .4, .6, .8, 1), "overfit-tvae": (1, 1.25, 1.5, 1.75, 2), "dp-mst": (1, 5, 10, 50, 100)}


def test_risk_models_with_different_level_counts_share_one_axis():
    # placed by index, leaky's 6 levels ran to x=5 and the other models' 5 stopped at x=4, as if short of
    # their most risk; now each runs from its least risk (0) to its most (1)
    import matplotlib.pyplot as plt

    from synthzoo.metrics.html import _risk_figures
    panels, corr = _risk_figures(_risk_frame(RISK))
    for m, fig in panels:
        lines = fig.axes[0].lines
        assert len(lines) == 3
        assert all(np.isclose(min(ln.get_xdata()), 0) and np.isclose(max(ln.get_xdata()), 1) for ln in lines), m
        assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["least risk", "most risk"]
        # curves that coincide (identical_match_risk 0 for two models) stay told apart by marker and size
        assert len({ln.get_marker() for ln in lines}) == 3
        assert len({ln.get_markersize() for ln in lines}) == 3
        plt.close(fig)
    plt.close(corr)


def test_risk_text_is_readable_and_the_correlations_are_written_once():
    import matplotlib.pyplot as plt

    from synthzoo.metrics.html import _risk_figures
    risk = _risk_frame(RISK)
    panels, corr = _risk_figures(risk)
    # the panels' ticks were 6 pt and their titles 8 pt (7-10 px at 100 %); the matrix's numbers 6 pt
    for fig in [f for _, f in panels] + [corr]:
        ax = fig.axes[0]
        texts = [t for t in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts + [ax.title] if t.get_text()]
        assert texts and min(t.get_fontsize() for t in texts) >= 9
    n = len(risk)
    numbers = corr.axes[0].texts
    # the symmetric matrix wrote each pair twice and a diagonal of 1.0
    assert len(numbers) == n * (n - 1) // 2
    assert [t.get_text() for t in corr.axes[0].get_yticklabels()] == list(risk.index[1:])
    for _, f in panels:
        plt.close(f)
    plt.close(corr)


def test_the_risk_section_names_the_levels_of_the_table_it_plots(tmp_path):
    from synthzoo.datasets import make_demo
    df, schema = make_demo(60, seed=0)
    table = pd.DataFrame([{"metric": "tvd_2way", "group": "fidelity", "value": 0.1, "HALF": 0.05,
                           "INDEPENDENT": 0.3, "SELF": 0.0, "better": "lower", "description": "d"}])
    risk = _risk_frame({"leaky": (0, .5, 1), "dp-aim": (1, 10)})
    text = write_html_report(tmp_path / "r.html", table, df.head(30), df.tail(30), schema, risk=risk).read_text()
    section = text[text.index("<h2 id='risk'>"):text.index("<h2 id='assoc'>")]
    # the figure said "leaky f = 0 ... 1, overfit f_o = 1 ... 2, DP epsilon = 1 ... 100" whatever was swept
    assert "leaky: f, the share of the release copied from the training rows = 0, 0.5, 1" in section
    assert "dp-aim: epsilon = 1, 10" in section and "overfit" not in section
    # one figure a metric in the page's grid (one 1,200 px figure shrank its text to 6 px at 800 px),
    # under a key of the models' colours
    assert section.count("<figure><img") == len(risk)
    assert re.search(r"<p style='font-size:13px'><span style='color:#[0-9a-f]{6}'>.*?</span>&nbsp;leaky", section)


def test_two_readable_categories_are_not_cut():
    # income's <=50K (76 %) beside >50K (24 %) was cut off to a bar no taller than its neighbour
    g = np.random.default_rng(0)
    schema = Schema([Column("income", "categorical", categories=["<=50K", ">50K"])])
    real, synth = (pd.DataFrame({"income": g.choice(["<=50K", ">50K"], 4000, p=[.76, .24])}) for _ in range(2))
    f = _figures(real, synth, schema)["income"]
    assert "cut off" not in f["note"] and not f["ax"].texts
    assert f["ax"].get_ylim()[1] >= max(p.get_height() for p in f["bars"])


def test_a_count_of_significant_columns_reads_as_columns():
    # it read "per column: 4 off the real-data floor", as if each column were 4 off
    row = {"metric": "ks_significant", "group": "fidelity", "value": 5.0, "HALF": 1.0, "INDEPENDENT": 2.0,
           "SELF": 0.0, "better": "lower", "description": "d"}
    assert _verdict(row) == "4 columns more than the real-data floor"
    assert _verdict({**row, "value": 2.0}) == "1 column more than the real-data floor"
    assert _verdict({**row, "value": 1.0}) == "as many columns as the real-data floor or fewer"


def test_a_risk_is_placed_from_zero_not_from_a_negative_half():
    # inference risk .17 (CI -.04 to .38) beside a HALF of -.72 read "close to copying": placed between
    # HALF and SELF it sat 52 % of the way, though R is already 0 for unseen rows and 1 for a copy
    r = _privacy(metric="inference_risk", value=0.1692, HALF=-0.7222, ci_low=-0.0446, ci_high=0.383)
    assert _verdict(r) == "some leakage (17% of the way to a copy)"


def test_a_uniform_share_is_drawn_on_a_linear_axis():
    # a share uniform on (0, 1] spans two orders of magnitude (its 0.5 percentile is about .005) and was
    # drawn on a log axis, as a density rising towards 1; a log axis is for a heavy tail (capital-gain)
    g = np.random.default_rng(0)
    real, synth = (pd.DataFrame({"share": g.uniform(0, 1, 500)}) for _ in range(2))
    schema = Schema([Column("share", "numerical", lower=0, upper=1)])
    assert _figures(real, synth, schema)["share"]["scale"] == "linear"


def test_a_constant_column_is_one_bar_at_its_value():
    # a constant 5 (lower == upper) was drawn as a bar at 5 beside an empty one at 6, a value it never had
    real = synth = pd.DataFrame({"const": np.full(50, 5.0)})
    f = _figures(real, synth, Schema([Column("const", "numerical", lower=5, upper=5)]))["const"]
    filled = [p for p in f["bars"] if p.get_fill()]
    assert len(filled) == 1 and filled[0].get_x() == 4.5 and filled[0].get_width() == 1 and f["ticks"] == ["5"]


def test_dollar_signs_in_names_are_drawn_as_written():
    # a category "$0-$50" was matplotlib mathtext: its tick read "0-50", the dollars gone; a column name
    # with two "$" likewise lost them in its title
    g = np.random.default_rng(0)
    bands = ["$0-$50", "$50-$100"]
    real, synth = (pd.DataFrame({"pay $ (in $)": g.choice(bands, 50)}) for _ in range(2))
    ax = _figures(real, synth, Schema([Column("pay $ (in $)", "categorical", categories=bands)]))["pay $ (in $)"]["ax"]
    # what matplotlib draws: the text as written, not parsed as math
    drawn = [t._preprocess_math(t.get_text()) for t in [*ax.get_xticklabels(), ax._left_title]]
    assert sorted(drawn) == [("$0-$50", False), ("$50-$100", False), ("pay $ (in $)", False)]
