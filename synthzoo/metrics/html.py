"""The self-contained HTML report of ``synthzoo eval``: the metric tables with their baselines, the
membership-inference ROC curves, the risk-response curves of a risk-insertion run, the
association-difference heatmap and per-column distributions, written to one file (plots embedded
as PNG)."""

from __future__ import annotations

import base64
import html
import io
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.csvfile import read_csv
from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import resolve_schema
from .association import association_matrices
from .evaluate import evaluate

REAL, SYNTH = "#1f5fa8", "#e8710a"  # blue and orange: distinct in print and for red-green colour blindness


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _label(text) -> str:
    """A name from the data as matplotlib text: its "$" escaped, or a category "$0-$50" is mathtext and
    reads "0-50" (and a column "a_$b$" a subscript)."""
    return str(text).replace("$", r"\$")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    _plt().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


# ---------------------------------------------------------------------------------------
# per-column distributions
# ---------------------------------------------------------------------------------------

def _compact(x: float) -> str:
    """A tick's number in at most about five characters: 350000 reads 350k, 1.5e6 1.5M (the axis of
    a skewed column read "250000300000350000", its labels touching)."""
    ax = abs(x)
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if ax >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}" if ax >= 1e-3 or x == 0 else f"{x:.0e}"


def _date_axis(ax, lo: float, hi: float) -> None:
    """A datetime column's axis in dates, not its epoch seconds (signup_date read "1.50 ... 1.70 1e9")."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    span = hi - lo
    fmt = "%Y" if span > 3 * 365 * 86400 else ("%Y-%m" if span > 90 * 86400 else "%Y-%m-%d")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: pd.Timestamp(v, unit="s").strftime(fmt) if np.isfinite(v) else ""))


#: a value held by at least this share of the real rows is a spike, drawn as a share, not a bar, when it
#: sits at an end of the values (capital-gain's 0: zero inflation, censoring); inside the range
#: (hours-per-week's 40, 47 % of the rows) it keeps its bar, cut off at the top (left out, it left a
#: hole in the middle of the histogram)
_SPIKE_SHARE = 0.3
#: a bar this many times taller than every other is cut off at the top, its height written on it
_CUT = 3.0
#: a category this many times more frequent than every other is cut off at the top: categories are read
#: against each other, and income's <=50K at 76 % beside >50K at 24 % (3.2 times) was cut at 3 to a bar of
#: the same height as its neighbour, two readable shares no longer compared by eye
_CUT_CATEGORY = 5.0
#: a histogram of one bar per integer value, or of few values, keeps every bar (a 1-5 rating's mode, or
#: education-num's 9 among 16 levels, left out read "share of the rows != 9" over a gap)
_SPIKE_MIN_VALUES = 12


def _cut_tallest(ax, hr: np.ndarray, hs: np.ndarray, left: np.ndarray, right: np.ndarray,
                 ratio: float = _CUT) -> int | None:
    """Cut off at the top a bar that flattens the rest (hours-per-week's 40, native-country's
    United-States at 90 %): the y axis ends a third above the next tallest bar and the cut bar's real /
    synthetic shares are written beside its top, right of its right edge ``right[k]`` (left of ``left[k]``
    for the last bar), on no part of it.  ``hr``/``hs``: the real and synthetic heights per bar.  Returns
    the bar's index, or None when no bar is ``ratio`` times taller than every other."""
    tall = np.maximum(hr, hs)
    if tall.size < 2:
        return None
    k = int(tall.argmax())
    rest = float(np.delete(tall, k).max())
    if not (rest > 0 and tall[k] > ratio * rest):
        return None
    top_y = 1.35 * rest
    ax.set_ylim(0, top_y)
    # a white slash across the bar below the top: it goes on past the axis (a bar that merely reached
    # the top looked the same)
    ax.plot([left[k], right[k]], [0.88 * top_y, 0.94 * top_y], color="white", lw=2.5, solid_capstyle="butt",
            gid="cut-mark")
    last = k == tall.size - 1
    ax.annotate(f"{hr[k]:.0%} / {hs[k]:.0%}", (left[k] if last else right[k], top_y), xytext=(-3 if last else 3, -3),
                textcoords="offset points", ha="right" if last else "left", va="top", fontsize=7, color="#333")
    return k


def _numeric_panel(ax, r: np.ndarray, s: np.ndarray, col) -> str:
    """Histogram of a number, real filled and synthetic as an outline (they never blend into one
    colour).  A value held by at least 30 % of the real rows (capital-gain's 0) of a column with
    many other values is shown as its own share in the caption, not as a bar that flattens the rest;
    the rest is binned over the 0.5-99.5 percentile range -- values beyond it are *left out and
    counted*, never piled into the end bins -- on a log axis when it spans more than two orders of
    magnitude with its median in the lowest fifth of that range (a heavy tail).  A column of few
    integer values gets one bar per value.  Tick labels are compact (350k, not 350000) and a
    datetime column's are dates.  Returns a note for the caption."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    note = []
    is_date = col.kind == "datetime"
    show = col.show if is_date else (lambda v: f"{v:g}")
    vals, counts = np.unique(r, return_counts=True) if r.size else (np.array([]), np.array([]))
    spike = None
    whole = (lambda v: v.size > 0 and not is_date and (col.integer or np.mean(v == np.round(v)) > 0.9))
    allv = np.concatenate([r, s])
    per_integer = whole(allv) and np.ptp(np.quantile(allv, [0.005, 0.995])) <= 80
    top = counts.argmax() if counts.size else None
    if (top is not None and vals.size > _SPIKE_MIN_VALUES and not per_integer
            and counts[top] >= _SPIKE_SHARE * r.size and top in (0, vals.size - 1)):
        spike = vals[top]
        share_r, share_s = float(np.mean(r == spike)), float(np.mean(s == spike)) if s.size else 0.0
        note.append(f"= {show(spike)}: real {share_r:.0%}, synthetic {share_s:.0%} (not drawn)")
        r, s = r[r != spike], s[s != spike]
    both = np.concatenate([r, s])
    if both.size == 0:
        ax.text(0.5, 0.5, "no other values", ha="center", va="center", transform=ax.transAxes, fontsize=8)
        return "; ".join(note)
    lo, hi = np.quantile(both, [0.005, 0.995])
    if hi <= lo:
        lo, hi = float(both.min()), float(both.max())
        if hi == lo and not whole(both):  # one value: a bin around it (a whole one gets its own bar below)
            lo, hi = lo - 0.5, hi + 0.5  # hi + 1 drew a constant 5 beside an empty bar at 6, a value it never had
    # a heavy tail: over two orders of magnitude with the bulk near the low end; a uniform share in (0, 1]
    # spans them too (its 0.5 percentile .005), and a log axis drew it as a density rising towards 1
    log = not is_date and lo > 0 and hi / lo > 100 and np.median(both) - lo < 0.2 * (hi - lo)
    # bins as the rows allow: 40 bins over 30 rows drew a comb of single rows (2 sqrt(n), 10 to 40)
    nb = int(np.clip(np.ceil(2 * np.sqrt(min(r.size, s.size) if s.size else r.size)), 10, 40))
    if log:
        edges = np.geomspace(lo, hi, nb + 1)
        ax.set_xscale("log")
    elif whole(both) and hi - lo <= 80:
        # one bar per integer (also for integer-valued columns not declared so): no empty comb bins
        edges = np.arange(np.floor(lo) - 0.5, np.ceil(hi) + 1.0)
    elif whole(both):
        # whole numbers over a wider range: bins of a whole number of values each, so that no bin holds
        # one value more than its neighbours (a comb of alternate heights that was not in the data)
        w = np.ceil((hi - lo) / nb)
        edges = np.arange(np.floor(lo) - 0.5, np.ceil(hi) + w, w)
    else:
        edges = np.linspace(lo, hi, nb + 1)
    out = float(np.mean((both < edges[0]) | (both > edges[-1])))
    if out > 0:
        a, b = (edges[0] + 0.5, edges[-1] - 0.5) if whole(both) and not log else (edges[0], edges[-1])
        shown = (lambda v: _compact(float(v))) if not is_date else show
        note.append(f"{out:.1%} of values (the extreme tails) beyond the plotted range, {shown(a)} to {shown(b)}")
    wr = np.full(r.size, 1.0 / max(r.size, 1))
    ws = np.full(s.size, 1.0 / max(s.size, 1))
    hr = ax.hist(r, bins=edges, weights=wr, color=REAL, alpha=0.45, label="real")[0]
    hs = ax.hist(s, bins=edges, weights=ws, histtype="step", color=SYNTH, linewidth=1.6, label="synthetic")[0]
    k = _cut_tallest(ax, hr, hs, edges[:-1], edges[1:])
    if k is not None:
        label = (lambda v: _compact(float(v))) if not is_date else show
        a, b = edges[k], edges[k + 1]
        if whole(both) and not log:
            a, b = np.ceil(a), np.floor(b)
        span = f"at {label(a)}" if a == b else f"{label(a)}-{label(b)}"
        note.append(f"the bar {span} is cut off at the top: real {hr[k]:.0%}, synthetic {hs[k]:.0%}")
    ax.set_ylabel("share of rows" if spike is None else f"share of the rows != {show(spike)}", fontsize=7)
    if is_date:
        _date_axis(ax, edges[0], edges[-1])
    elif log:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _compact(v)))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.set_xlabel("log scale", fontsize=7)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=edges[1] - edges[0] == 1))
        if edges.size == 2 and whole(both):  # one whole value: its tick (the locator wants two: 4.4 ... 5.6)
            ax.set_xticks([edges[0] + 0.5])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _compact(v)))
    return "; ".join(note)


#: at most this many categories a plot; the rest are counted in the caption
_MAX_BARS = 20


def _share(x: float) -> str:
    """A share of rows as a percentage that does not round a few rows to "0%"."""
    return "0%" if x == 0 else (f"{x:.0%}" if x >= 0.095 else (f"{x:.1%}" if x >= 0.001 else "<0.1%"))


def _column_plots(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> list[tuple[str, str, str]]:
    """Each column's (name, PNG data URL, caption note)."""
    return [(name, _png(fig), note) for name, fig, note in _column_figures(real, synth, schema)]


def _column_figures(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema):
    """Each column's (name, matplotlib figure, caption note), one at a time (the caller closes each)."""
    plt = _plt()
    from ._common import category_codes, numeric_array
    for col in schema.columns:
        fig, ax = plt.subplots(figsize=(4.4, 2.8))
        note = ""
        if col.kind == "categorical":
            k = len(col.categories)
            labels = [str(c) for c in col.categories] + ["(missing)", "(outside schema)"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rc = category_codes(real[col.name], col, "real", warn=False)
                sc = category_codes(synth[col.name], col, "synthetic", warn=False)
            size = k + 2
            hr = np.bincount(rc, minlength=size) / len(rc)
            hs = np.bincount(sc, minlength=size) / len(sc)
            keep = [i for i in range(size) if (i < k or (i == k and col.missing) or hr[i] + hs[i] > 0)]
            if len(keep) > _MAX_BARS:
                # the most frequent in either table: a category the release invents or inflates is shown
                # even where the real rows barely hold it
                keep = sorted(keep, key=lambda i: -max(hr[i], hs[i]))
                hidden = keep[_MAX_BARS:]
                keep = keep[:_MAX_BARS]
                # how much the reader does not see, not just how many categories
                note = (f"{len(hidden)} of {len(hidden) + len(keep)} categories not shown, holding real "
                        f"{_share(hr[hidden].sum())}, synthetic {_share(hs[hidden].sum())} of the rows")
            keep = sorted(keep, key=lambda i: (-hr[i], -hs[i]))
            x = np.arange(len(keep))
            ax.bar(x - 0.2, hr[keep], 0.4, label="real", color=REAL)
            ax.bar(x + 0.2, hs[keep], 0.4, label="synthetic", color=SYNTH)
            ax.set_xlim(-0.6, len(keep) - 0.4)
            cut = _cut_tallest(ax, hr[keep], hs[keep], x - 0.4, x + 0.4, ratio=_CUT_CATEGORY)
            if cut is not None:
                # native-country's United-States (90 %) left every other bar a line at the bottom
                note = "; ".join(n for n in (f"{labels[keep[cut]]} is cut off at the top: real {hr[keep[cut]]:.0%}, "
                                             f"synthetic {hs[keep[cut]]:.0%}", note) if n)
            ax.set_xticks(x)
            # a long name cut short says so (Outlying-US(Guam-USVI-etc) read "Outlying-US(Guam-U")
            ax.set_xticklabels([_label(lb if len(lb) <= 18 else lb[:17] + "\u2026")
                                for lb in (labels[i] for i in keep)], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("share of rows", fontsize=7)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = numeric_array(real[col.name], col, "real", warn=False)
                s = numeric_array(synth[col.name], col, "synthetic", warn=False)
            miss = (float(np.isnan(r).mean()), float(np.isnan(s).mean()))
            note = _numeric_panel(ax, r[~np.isnan(r)], s[~np.isnan(s)], col)
            if col.missing:
                note = "; ".join(x for x in (note, f"missing: real {miss[0]:.0%}, synthetic {miss[1]:.0%}") if x)
        ax.tick_params(labelsize=7)
        ax.set_title(_label(col.name), fontsize=9, loc="left")
        if ax.get_legend_handles_labels()[0]:  # a column with no value to draw has no legend (matplotlib warned)
            # above the plot, beside the title: inside it, "best" still covered bars of a dense histogram
            ax.legend(fontsize=7, frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2,
                      borderaxespad=0.1, handlelength=1.4, columnspacing=1.0)
        yield col.name, fig, note


# ---------------------------------------------------------------------------------------
# heatmaps, ROC curves, risk response
# ---------------------------------------------------------------------------------------

def _lower_triangle(ax, m: pd.DataFrame, cmap, vmin, vmax, fmt, fontsize, dark, labelsize):
    """A symmetric matrix below its diagonal only, each pair's number written once: both halves wrote
    every number twice (210 for adult's 105 column pairs), and a diagonal of 1s says nothing.  Rows
    2..n against columns 1..n-1 (the first row and the last column would hold no cell).  ``dark(v)``:
    whether a cell is dark enough for white text."""
    n = len(m)
    lower = np.where(np.tril(np.ones((n, n), bool), k=-1), m.to_numpy(dtype=float), np.nan)[1:, :-1]
    im = ax.imshow(lower, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n - 1))
    ax.set_yticks(range(n - 1))
    ax.set_xticklabels([_label(c) for c in m.columns[:-1]], rotation=60, ha="right", fontsize=labelsize)
    ax.set_yticklabels([_label(c) for c in m.index[1:]], fontsize=labelsize)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for i in range(1, n):
        for j in range(i):
            v = m.iat[i, j]
            if np.isfinite(v):
                ax.text(j, i - 1, fmt(v), ha="center", va="center", fontsize=fontsize,
                        color="white" if dark(v) else "black")
    return im


def _heatmap(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> str:
    return _png(_heatmap_figure(real, synth, schema))


def _heatmap_figure(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema):
    """The absolute association differences below the diagonal only: the matrix is symmetric, and
    both halves wrote every number twice (210 numbers for adult's 105 pairs)."""
    plt = _plt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = association_matrices(real, synth, schema)
    d = (a - b).abs()
    n = len(d)
    cell = 0.75 if n <= 16 else 0.55
    fig, ax = plt.subplots(figsize=(cell * n + 2.8, cell * n + 1.6))
    vmax = max(0.3, float(np.nanmax(d.to_numpy())))
    im = _lower_triangle(ax, d, "Reds", 0, vmax, lambda v: f"{v:.2f}".lstrip("0") if v < 1 else "1",
                         10 if n <= 12 else (9 if n <= 16 else 7), lambda v: v > 0.55 * vmax, labelsize=10)
    fig.colorbar(im, ax=ax, shrink=0.7, label="|association(real) - association(synthetic)|")
    ax.set_title("Pairwise association differences (Pearson / Cramér's V / correlation ratio)", fontsize=11)
    return fig


def _roc_plot(mia: tuple) -> str:
    return _png(_roc_figure(mia))


#: plot text of the wide figures (ROC, risk response), in points: at the PNG's 90 dpi 9 pt is 11 px on the
#: page (the ROC legend's 7 pt and the risk panels' 6 pt ticks read 7-9 px at 100 %)
_FS = 9


def _roc_figure(mia: tuple):
    """The attacks' ROC curves: linear axes (the area under them is the table's AUC) and, on log axes, the
    low false-positive region as the staircase a threshold on the score reaches -- the table's "TPR at
    1 % FPR" is read off it.  Drawn straight, a block of tied scores (dcr_hamming's integer distances) was a
    slope above the blind guess where the table said TPR 0."""
    plt = _plt()
    table, det = mia
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    cmap = plt.get_cmap("tab10")
    for k, (name, (fpr, tpr)) in enumerate(det["roc"].items()):
        auc = float(table.loc[table["attack"] == name, "auc"].iloc[0])
        axes[0].plot(fpr, tpr, color=cmap(k), lw=1.5, label=f"{name} (AUC {auc:.3f})")
        axes[1].plot(fpr, tpr, color=cmap(k), lw=1.5, drawstyle="steps-post")
    n_neg = int((~det["y"]).sum())
    for ax in axes:
        ax.plot([1.0 / n_neg, 1], [1.0 / n_neg, 1], color="grey", ls="--", lw=1, label="blind guess")
        ax.set_xlabel("false-positive rate (non-members flagged)", fontsize=_FS)
        ax.set_ylabel("true-positive rate (members found)", fontsize=_FS)
        ax.tick_params(labelsize=_FS)
        ax.grid(alpha=0.3)
    axes[0].set_title("ROC curves of the membership attacks", fontsize=_FS + 1)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    # the smallest rate the non-members resolve: one false positive
    axes[1].set_xlim(1.0 / n_neg, 1)
    axes[1].set_ylim(1.0 / n_neg, 1)
    axes[1].set_title("low false-positive region (log scales)", fontsize=_FS + 1)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout()
    # under the panels, not inside one: in the linear panel it covered the corner a curve below the
    # diagonal runs through, and the log panel had none
    fig.legend(handles, labels, fontsize=_FS, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3,
               frameon=False)
    return fig


def _risk_plots(risk: pd.DataFrame) -> tuple[list[tuple[str, str]], str]:
    panels, corr = _risk_figures(risk)
    return [(m, _png(f)) for m, f in panels], _png(corr)


def _risk_key(risk: pd.DataFrame) -> str:
    """The risk models' colours as a line of the page, above the panels' grid."""
    from matplotlib.colors import to_hex
    cmap = _plt().get_cmap("tab10")
    return " &nbsp; ".join(f"<span style='color:{to_hex(cmap(k % 10))}'>&#8212;{_MARKERS[k % len(_MARKERS)][1]}&#8212;"
                           f"</span>&nbsp;{html.escape(str(m))}"
                           for k, m in enumerate(dict.fromkeys(risk.columns.get_level_values(0))))


#: the risk models' markers, as matplotlib draws them and as the page's key writes them
_MARKERS = (("o", "&#9679;"), ("s", "&#9632;"), ("^", "&#9650;"), ("D", "&#9670;"), ("v", "&#9660;"))


#: what a risk model's level is, by the model's name (bench_risk.py's leaky, overfit-<model>, dp-<preset>)
_LEVEL_NAMES = (("leaky", "f, the share of the release copied from the training rows"),
                ("overfit", "f_o, the training length in multiples of the converged length"),
                ("dp", "epsilon"))


def _risk_levels(risk: pd.DataFrame) -> str:
    """The levels each risk model of ``risk`` swept, read from its columns: the figure said "leaky f = 0 ... 1,
    overfit f_o = 1 ... 2, DP epsilon = 1 ... 100" whatever the table held."""
    out = []
    for model in dict.fromkeys(risk.columns.get_level_values(0)):
        what = next((w for p, w in _LEVEL_NAMES if str(model).startswith(p)), "level")
        levels = ", ".join(f"{float(v):g}" for v in risk[model].columns)
        out.append(f"{model}: {what} = {levels}")
    return "; ".join(out)


def _risk_figures(risk: pd.DataFrame):
    """Each metric against each risk model's level, a figure a metric (``[(metric, figure)]``), and the
    metrics' Spearman correlation over every release (a figure).  Each model's levels are spread evenly
    from 0 (its lowest risk) to 1 (its highest): placed by index, leaky's six levels ended right of the other
    models' five, as if those stopped short of the most risk."""
    from .risk import correlation_matrix
    plt = _plt()
    models = list(dict.fromkeys(risk.columns.get_level_values(0)))
    cmap = plt.get_cmap("tab10")
    panels = []
    # one figure a metric, laid out by the page's grid: one figure of 4 x 4 panels was 1,200 px wide and
    # shrank its 9 pt text to 6 px at 800 px
    for m in risk.index:
        fig, ax = plt.subplots(figsize=(3.3, 2.5))
        for k, model in enumerate(models):
            sub = risk.loc[m, model]
            x = np.linspace(0, 1, len(sub)) if len(sub) > 1 else np.zeros(1)
            # each model its own marker, each drawn smaller than the one before: curves that coincide
            # (overfit and DP both at identical_match_risk 0) showed only the last one drawn
            ax.plot(x, sub.to_numpy(dtype=float), color=cmap(k % 10), marker=_MARKERS[k % len(_MARKERS)][0],
                    ms=max(7 - 1.5 * k, 3), lw=max(2.2 - 0.5 * k, 1), label=model)
        ax.set_title(m, fontsize=_FS + 1)
        ax.tick_params(labelsize=_FS)
        ax.set_xlim(-0.08, 1.08)
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["least risk", "most risk"])
        ax.grid(alpha=0.3)
        panels.append((m, fig))
    corr = correlation_matrix(risk)
    n = len(corr)
    cfig, ax = plt.subplots(figsize=(0.55 * n + 3.0, 0.55 * n + 1.8))
    im = _lower_triangle(ax, corr, "RdBu_r", -1, 1, lambda v: f"{v:.1f}", _FS, lambda v: abs(v) > 0.6,
                         labelsize=_FS)
    cfig.colorbar(im, ax=ax, shrink=0.7).set_label("Spearman correlation", fontsize=_FS)
    ax.set_title(f"Spearman correlation of the metrics over all {risk.shape[1]} releases",
                 fontsize=_FS + 1)
    return panels, cfig


# ---------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------

def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    ax = abs(x)
    if ax >= 1e4:  # housing's RMSE read "8.953e+04"; dollars read 89,535
        return f"{x:,.0f}"
    # down to 1e-4 in decimals: identical_match_risk's -0.0005 read "-5.00e-04"
    return f"{x:.4g}" if ax >= 1e-4 or ax == 0 else f"{x:.2e}"


#: metrics of single columns: INDEPENDENT keeps every column's values, so it is a floor for them too
_ONE_WAY = {"tvd_1way", "ks_distance", "ks_significant", "hellinger", "dwm", "ci_overlap"}


def _isnan(x) -> bool:
    return x is None or (isinstance(x, float) and np.isnan(x))


#: the privacy rows that are a normalised risk R (0 = like unseen real rows, 1 = the training rows), marked R
_R_METRICS = {"dcr_risk", "identical_match_risk", "nndr_risk", "singling_out_risk", "linkability_risk",
              "inference_risk"}
#: a privacy value whose 95 % CI is wider than this (on R's 0-1 scale) has no reading but its uncertainty
_WIDE_CI = 0.5


def _verdict(row) -> str:
    """Where the value sits between the HALF floor and the INDEPENDENT/SELF reference.

    Positions are measured in the metric's own "worse" direction (``better``), so a value better
    than both references reads as such rather than as "no better than independent columns", and
    references that do not separate (INDEPENDENT as good as HALF, e.g. a target the features
    barely predict) are said to, instead of being divided by.  A privacy value reads "like a
    non-member release" only when its 95 % CI holds the HALF value or, without a CI, when it lies
    within 2 % of the way to SELF: 100 verbatim rows of 1,500 (identical-match share .067) are
    leakage, not noise."""
    v = row["value"]
    sign = -1.0 if row.get("better") == "higher" else 1.0  # badness = sign * value
    if row["metric"] in _ONE_WAY:
        h = row.get("HALF")
        if _isnan(v) or _isnan(h):
            return ""
        gap = sign * (v - h)
        scale = abs(h) if row["metric"] != "ci_overlap" else abs(1 - h)
        if row["metric"] == "ks_significant":
            # a count of columns: "per column: 4 off the real-data floor" read as a distance of 4 in each column
            more = v - h
            return ("as many columns as the real-data floor or fewer" if more <= 0 else
                    f"{more:g} column{'s' if more != 1 else ''} more than the real-data floor")
        return "per column: near the real-data floor" if gap <= max(0.5 * scale, 1e-12) else \
            f"per column: {gap:.3g} off the real-data floor"
    priv = row["group"] == "privacy"
    ref_lo, ref_hi = row.get("HALF"), row.get("SELF" if priv else "INDEPENDENT")
    if _isnan(v) or _isnan(ref_lo) or _isnan(ref_hi):
        return ""
    bv, blo, bhi = sign * v, sign * ref_lo, sign * ref_hi
    if row["metric"] in _R_METRICS:  # R is 0 for unseen real rows by construction: a HALF below 0 (noise)
        blo = max(blo, 0.0)  # stretched the scale, and R .17 beside HALF -.72 read "close to copying"
    if bhi <= blo:  # the references do not separate: no scale to place the value on
        if priv:
            return ""
        return ("at least as good as both references (they do not separate here)" if bv <= max(blo, bhi)
                else "worse than both references (they do not separate here)")
    pos = (bv - blo) / (bhi - blo)
    if priv:
        lo, hi = row.get("ci_low"), row.get("ci_high")
        if not (_isnan(lo) or _isnan(hi)) and hi - lo > _WIDE_CI:
            # inference risk on 30 rows: -.09 in [-.79, .61] read "some leakage (27 % of the way to a copy)"
            return f"too uncertain to read (95 % CI {_fmt(lo)} to {_fmt(hi)}: too few attack trials)"
        if row["metric"] in _R_METRICS and v <= 0:
            # a negative R is a release less revealing than unseen real rows; it read "some leakage" when
            # HALF was more negative still
            return "like a non-member release" + (" (R below 0 reads as 0)" if v < 0 else "")
        if not (_isnan(lo) or _isnan(hi)):
            covers = min(sign * lo, sign * hi) <= blo
            if covers and pos < 0.1:
                return "like a non-member release"
        elif pos < 0.02:
            return "like a non-member release"
        return "close to copying" if pos > 0.5 else f"some leakage ({pos:.0%} of the way to a copy)"
    if pos <= 0:
        return "at least as good as the real-data floor"
    return "near the real-data floor" if pos < 0.25 else ("no better than independent columns" if pos > 0.9 else "in between")


_RISK_NOTE = ("Risks marked <sup>R</sup> are normalised against the holdout: 0 = no more revealing than a "
              "release of real rows the synthesizer never saw, 1 = the training rows released. A negative R means "
              "the release revealed <i>less</i> than unseen real rows would (sampling noise, or a smoothed "
              "release): read it as 0; the reading column says so. AUCs have 0.5 as their no-leak value, F1 of "
              "the classifier attack 0.5.")


def _table(sub: pd.DataFrame, nan_reasons: dict | None = None) -> list[str]:
    """The rows of one group; a value evaluate could not compute reads "not computed: <why>" (its
    ``details["nan_reasons"]``), not a bare dash."""
    base_cols = [b for b in ("HALF", "INDEPENDENT", "SELF") if b in sub and sub[b].notna().any()]
    has_ci = "ci_low" in sub and sub["ci_low"].notna().any()
    head = ["metric", "value"] + (["95 % CI"] if has_ci else []) + base_cols + ["better", "reading", "description"]
    # in a scrolling box: at 800 px the privacy table ran off the page's right edge, its descriptions unseen
    parts = ["<div class='scroll'><table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for _, row in sub.iterrows():
        mark = "&nbsp;<sup title='normalised risk R'>R</sup>" if row["metric"] in _R_METRICS else ""
        cells = [f"<td><b>{html.escape(str(row['metric']))}</b>{mark}</td>",
                 f"<td class='num'>{_fmt(row['value'])}</td>"]
        if has_ci:
            ci = "&mdash;" if pd.isna(row.get("ci_low")) else f"[{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]"
            cells.append(f"<td class='num'>{ci}</td>")
        cells += [f"<td class='num'>{_fmt(row.get(b))}</td>" for b in base_cols]
        cells.append(f"<td>{html.escape(str(row['better']))}</td>")
        reading = _verdict(row)
        if _isnan(row["value"]) and (nan_reasons or {}).get(row["metric"]):
            reading = f"not computed: {nan_reasons[row['metric']]}"
        cells.append(f"<td class='reading'>{html.escape(reading)}</td>"
                     f"<td class='muted desc'>{html.escape(str(row['description']))}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table></div>")
    if has_ci and sub["ci_low"].isna().any():  # say why some rows have no interval, rather than leave cells empty
        parts.append("<p class='muted'>95 % CI: the binomial interval of an attack's success rates (singling out, "
                     "linkability, inference), carried through R (delta method). The distance metrics and DOMIAS are "
                     "one computation on the whole release, not a rate over attack trials, and have none "
                     "(&mdash;).</p>")
    return parts


def _alarms(x: float) -> str:
    return f"{x:,.0f} false alarm" + ("" if round(x) == 1 else "s") if x >= 0.95 else f"{x:.2g} false alarms"


def _mia_table(table: pd.DataFrame) -> str:
    """One row per attack, and the maximum of each column over the attacks naming the attack that
    reaches it: the row read "max (dcr_hamming)" beside TPRs that dcr_hamming did not reach (0 at 1 % FPR
    under the max's .013)."""
    cols = ("auc", "tpr@0.01", "tpr@0.001")
    each = table[~table["attack"].astype(str).str.startswith("max")]
    rows = "".join(f"<tr><td>{html.escape(str(r['attack']))}</td><td class='num'>{r['auc']:.3f}</td>"
                   f"<td class='num'>{_fmt(r['tpr@0.01'])}</td><td class='num'>{_fmt(r['tpr@0.001'])}</td></tr>"
                   for _, r in each.iterrows())
    if len(each):
        best = []
        for c in cols:
            v = each[c]
            if v.notna().any():
                i = v.idxmax()
                num = f"{v[i]:.3f}" if c == "auc" else _fmt(v[i])
                best.append(f"<td class='num'>{num} <span class='muted'>({html.escape(str(each.at[i, 'attack']))})"
                            "</span></td>")
            else:
                best.append(f"<td class='num'>{_fmt(np.nan)}</td>")
        rows += "<tr><td><b>max over attacks</b></td>" + "".join(best) + "</tr>"
    return ("<table><tr><th>attack</th><th>AUC</th><th>TPR at 1 % FPR</th><th>TPR at 0.1 % FPR</th></tr>"
            + rows + "<tr class='muted'><td>blind guess</td><td class='num'>0.5</td><td class='num'>0.01</td>"
            "<td class='num'>0.001</td></tr></table>")


def _caveat_text(c: str) -> str:
    """A caveat of ``details["caveats"]`` as a sentence of the page: without the warning's ``evaluate:``
    prefix (the box read "Read with care. evaluate: only 30 training rows ..."), capitalised, with a full stop."""
    c = c.strip()
    if c.startswith("evaluate: "):
        c = c[len("evaluate: "):]
    c = c[:1].upper() + c[1:]
    return c if c.endswith((".", "!", "?")) else c + "."


def _sections(table, details, risk, notes=None) -> list[tuple[str, str]]:
    out = [(g, g) for g in ("fidelity", "utility", "privacy") if (table["group"] == g).any()]
    if (details or {}).get("mia") is not None:
        out.append(("mia", "membership attacks"))
    if risk is not None and len(risk):
        out.append(("risk", "risk response"))
    # the notes (the evaluation's times) had no link: a reader of the list never learnt they were there
    return out + [("assoc", "associations"), ("columns", "columns")] + ([("notes", "notes")] if notes else [])


#: the columns of evaluate's frame the report reads
_TABLE_COLUMNS = ("metric", "group", "value", "better", "description")


def _check_table(table) -> None:
    """``ConfigError`` unless ``table`` is a frame such as :func:`~synthzoo.metrics.evaluate` returns (pandas'
    ``KeyError: 'group'`` said nothing of what to pass)."""
    if isinstance(table, tuple):
        raise ConfigError("table: got a tuple; evaluate(..., return_details=True) returns (table, details): pass "
                          "the table, and the details as details=")
    if not isinstance(table, pd.DataFrame):
        raise ConfigError(f"table: expected the frame synthzoo.evaluate returns, got {type(table).__name__}")
    lacking = [c for c in _TABLE_COLUMNS if c not in table.columns]
    if lacking:
        raise ConfigError(f"table: lacks column(s) {lacking} of the frame synthzoo.evaluate returns; pass that "
                          "frame as it is")


def write_html_report(path, table: pd.DataFrame, train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema,
                      title: str = "synthzoo evaluation report", notes: dict | None = None, details: dict | None = None,
                      risk: pd.DataFrame | None = None) -> Path:
    """Write a self-contained HTML page (plots embedded as base64 PNG): the metric tables with
    their baselines, the membership attacks' ROC curves (``details["mia"]`` from
    ``evaluate(..., return_details=True)``), the risk-response curves and metric correlations of
    a risk-insertion run (``risk``, a frame from :func:`synthzoo.metrics.risk.risk_response`), a
    heatmap of pairwise association differences and per-column distributions."""
    path = Path(path)
    schema = resolve_schema(schema, train)
    _check_table(table)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:24px;max-width:1400px;color:#222}"
             "table{border-collapse:collapse;font-size:13px;margin-bottom:8px}td,th{border:1px solid #ccc;"
             "padding:3px 8px;vertical-align:top}th{background:#eef}td.num{text-align:right;"
             "font-variant-numeric:tabular-nums;white-space:nowrap}.grid{display:flex;flex-wrap:wrap;gap:10px}"
             ".muted{color:#666;font-size:12px}figure{margin:0}figcaption{font-size:11px;color:#555;max-width:"
             "400px}.note{background:#f6f6f0;border-left:3px solid #bb9;padding:6px 10px;font-size:13px;"
             "max-width:1100px}.scroll{overflow-x:auto;max-width:100%}td.reading{min-width:10em}"
             # no column squeezed to a word a line: the box scrolls sideways instead (800 px)
             "td.desc{min-width:18em}"
             # the R mark raised its cell's first line below its neighbours' (dcr_risk sat lower than its value)
             "sup{line-height:0}"
             # a plot wider than the window (the heatmap at 800 px) shrinks to it instead of being cut off
             "img{max-width:100%;height:auto}"
             # below 1000 px two column plots a row, shrunk to fit, not one a row beside a blank half page
             "@media (max-width:1000px){.grid figure{width:calc(50% - 5px)}}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             "<p class='note'><b>Not for publication.</b> This page is computed from the real rows &mdash; their "
             "count, histograms, quantiles and the attacks' results on them &mdash; and no differential privacy "
             "covers it. "
             "Release the synthetic data, not this report.</p>",
             f"<p class='muted'>train rows: {len(train):,} &middot; synthetic rows: {len(synthetic):,} &middot; "
             f"columns: {len(schema)}. Baselines: HALF = one half of the real rows scored against the other "
             "(sampling noise at half the size: a reference, not a floor; a full-size release can score below it), "
             "INDEPENDENT = each column resampled alone (no correlations), SELF = the training rows "
             "released as they are (perfect fidelity, maximal risk).</p>",
             # tables too small (or a holdout too close to the training rows) for the values to mean much
             *(f"<p class='note'><b>Read with care.</b> {html.escape(_caveat_text(c))}</p>"
               for c in (details or {}).get("caveats", [])),
             "<p class='muted'>Sections: " + " &middot; ".join(
                 f"<a href='#{k}'>{v}</a>" for k, v in _sections(table, details, risk, notes)) + "</p>"]
    for group in ("fidelity", "utility", "privacy"):
        sub = table[table["group"] == group]
        if sub.empty:
            continue
        parts.append(f"<h2 id='{group}'>{group.capitalize()}</h2>")
        if group == "privacy":
            parts.append(f"<p class='note'>{_RISK_NOTE}</p>")
        parts += _table(sub, (details or {}).get("nan_reasons"))
    mia = (details or {}).get("mia")
    if mia is not None:
        parts.append("<h2 id='mia'>Membership-inference attacks</h2>")
        y = np.asarray(mia[1]["y"], bool)
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        # what the low-FPR numbers rest on: 0.1 % of 1,000 non-members is one false alarm
        parts.append("<p class='muted'>Training rows (members) and held-out rows (non-members) scored by each "
                     "attack against the release; the other half of the held-out rows is the attacker's "
                     f"reference sample ({n_pos:,} members, {n_neg:,} non-members scored). The dashed line is a "
                     "blind guess. The left panel's area is the AUC; the right panel, on log scales, draws the "
                     "staircase a threshold on the score reaches (the table's TPR at 1 % and 0.1 % FPR are read "
                     "off it) down to one false alarm: a curve above the dashed line there means some members are "
                     f"identified with few false alarms. Of {n_neg:,} non-members, 1 % FPR is {_alarms(n_neg / 100)} "
                     f"and 0.1 % {_alarms(n_neg / 1000)}: the TPRs there rest on that few rows.</p>")
        parts.append(_mia_table(mia[0]))
        parts.append(f"<img src='{_roc_plot(mia)}' alt='ROC curves of the membership attacks'>")
    if risk is not None and len(risk):
        curves, corr = _risk_plots(risk)
        parts.append("<h2 id='risk'>Risk response (risk insertion)</h2>")
        parts.append("<p class='muted'>Each privacy metric on releases whose risk was set on purpose (Plasencia "
                     "et al.): a metric that tracks a risk rises from left to right along that risk model's "
                     "curve. Each model's levels are spread evenly from its least risk (left) to its most "
                     f"(right): {html.escape(_risk_levels(risk))}.</p>")
        parts.append(f"<p style='font-size:13px'>{_risk_key(risk)}</p><div class='grid'>" + "".join(
            f"<figure><img src='{src}' alt='{html.escape(str(m))} against the risk level'></figure>"
            for m, src in curves) + "</div>")
        # its own caption: the levels line under the curves read as the title of this matrix
        parts.append("<p class='muted'>How the metrics move together: the Spearman correlation of each pair of "
                     "metrics over every release above, each pair once (1 = they rank the releases alike).</p>")
        parts.append(f"<img src='{corr}' alt='metric correlation matrix'>")
    parts.append("<h2 id='assoc'>Pairwise association differences</h2>")
    if len(schema.columns) > 1:
        parts.append(f"<img src='{_heatmap(train, synthetic, schema)}' alt='association difference heatmap'>")
    else:  # an empty frame (and matplotlib's warnings about its limits) drew no pair
        parts.append("<p class='muted'>One column: no pair of columns to compare.</p>")
    parts.append("<h2 id='columns'>Per-column distributions</h2><p class='muted'>Real rows in blue, synthetic in "
                 "orange: side-by-side bars for categories; for numbers the real histogram filled and the "
                 "synthetic one outlined.</p><div class='grid'>")
    for name, src, note in _column_plots(train, synthetic, schema):
        cap = f"<figcaption>{html.escape(note)}</figcaption>" if note else ""
        parts.append(f"<figure><img src='{src}' alt='{html.escape(name)}'>{cap}</figure>")
    parts.append("</div>")
    if notes:
        parts.append("<h2 id='notes'>Notes</h2><ul>" + "".join(
            f"<li><b>{html.escape(str(k))}</b>: {html.escape(str(v))}</li>" for k, v in notes.items()) + "</ul>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def timing_notes(timings: dict, wall: float | None = None) -> dict:
    """The report's notes on time: ``timings`` (``details["timings"]`` of :func:`evaluate`) gives each
    table its units' seconds summed -- they run side by side, so a table's sum can exceed the wall time
    and is labelled as such -- and ``mds`` its wall time; ``wall``: the evaluation's own wall time."""
    notes = {} if wall is None else {"time (wall, the whole evaluation)": f"{wall:.1f} s"}
    for k, v in timings.items():
        notes[f"time ({k})" if k == "mds" else f"time ({k}, summed over its units)"] = f"{v:.1f} s"
    return notes


def evaluate_files(real, synthetic, test=None, schema=None, out="report.html", metrics=None, seed: int = 0,
                   baselines: bool = True, risk=None, **kw) -> pd.DataFrame:
    """What ``synthzoo eval real.csv fake.csv --test test.csv --schema schema.json --out report.html``
    runs: read CSVs (or take frames), evaluate, write the HTML report to ``out`` and return the
    metric table.  Without a schema one is inferred from the real rows (with a warning: fine for
    evaluation, but not a differentially private schema).  ``risk``: a risk-response frame or the
    CSV ``benchmarks/bench_risk.py --out`` writes, plotted in the report."""
    if schema is not None and not isinstance(schema, Schema):
        p = Path(schema)
        if not p.exists():
            raise ConfigError(f"schema: file {str(p)!r} not found")
        schema = Schema.from_json(p)

    def read(x, role):
        if x is None or isinstance(x, pd.DataFrame):
            return x
        # the command line's reader: pandas' own read "NA" / "None" categories as missing and "02139" as 2139
        return read_csv(x, role=role, schema=schema)
    real_df, fake_df, test_df = read(real, "real"), read(synthetic, "synthetic"), read(test, "test")
    if schema is None:
        schema = Schema.infer(real_df)
    if risk is not None and not isinstance(risk, pd.DataFrame):
        p = Path(risk)
        if not p.exists():
            raise ConfigError(f"risk: file {str(p)!r} not found")
        risk = read_risk_csv(p)
    t0 = time.perf_counter()
    table, details = evaluate(real_df, fake_df, test=test_df, schema=schema, metrics=metrics, seed=seed,
                              baselines=baselines, return_details=True, **kw)
    notes = timing_notes(details["timings"], wall=time.perf_counter() - t0)
    if test_df is None:
        notes["privacy / ML"] = "no --test rows given: ML and privacy metrics need real held-out rows and were skipped"
    write_html_report(out, table, real_df, fake_df, schema, notes=notes, details=details, risk=risk)
    return table


def read_risk_csv(path) -> pd.DataFrame:
    """A risk-response table written by ``DataFrame.to_csv`` (two header rows: risk model, level)."""
    def not_one(why: str) -> ConfigError:
        return ConfigError(f"risk: {str(path)!r} is not a risk-response CSV ({why}); it is the table that "
                           "benchmarks/bench_risk.py --out writes: two header rows, risk model and level")

    try:
        df = pd.read_csv(path, header=[0, 1], index_col=0)
    except (ValueError, IndexError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise not_one(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    levels = []
    for a, b in df.columns:
        try:
            levels.append((a, float(b)))
        except (TypeError, ValueError):  # a plain CSV: its first row's values read as the second header
            raise not_one(f"column {a!r} has the level {b!r}, not a number") from None
    df.columns = pd.MultiIndex.from_tuples(levels, names=["risk_model", "level"])
    return df
