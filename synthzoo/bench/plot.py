"""The grid's heatmaps: mean 2-way TVD per selector x model cell, a panel per dataset and epsilon."""

from __future__ import annotations

import numpy as np
import pandas as pd


def plot_grid(res: pd.DataFrame, path: str) -> bool:
    """Heatmaps of the mean 2-way TVD over seeds: selector (rows) x model (columns), one panel per
    dataset and epsilon; cells that did not run are marked with their status, and a mean over fewer
    seeds than the cell ran says how many (``2/3 seeds``; a warning lists them). Returns False when
    there is no cell to draw."""
    import warnings

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = res[res["kind"] == "cell"]
    if cells.empty:
        return False
    dsets = list(dict.fromkeys(cells["dataset"]))
    epss = sorted(cells["epsilon"].unique())
    sels, mods = list(dict.fromkeys(cells["selector"])), list(dict.fromkeys(cells["model"]))
    fig, axes = plt.subplots(len(dsets), len(epss), squeeze=False,
                             figsize=(1.5 + (0.2 + 0.8 * len(mods)) * len(epss),
                                      0.6 + (0.5 + 0.45 * len(sels)) * len(dsets)))
    ok = cells[cells["status"] == "ok"]
    vmin, vmax = (float(ok["tvd_2way"].min()), float(ok["tvd_2way"].max())) if len(ok) else (0.0, 1.0)
    vmax = max(vmax, vmin + 1e-6)
    partial = []  # (dataset, epsilon, selector, model, ok seeds, seeds)
    for i, ds in enumerate(dsets):
        for j, eps in enumerate(epss):
            ax = axes[i, j]
            sub = cells[(cells["dataset"] == ds) & (cells["epsilon"] == eps)]
            m = np.full((len(sels), len(mods)), np.nan)
            for a, s in enumerate(sels):
                for b, mo in enumerate(mods):
                    c = sub[(sub["selector"] == s) & (sub["model"] == mo)]
                    good = c[c["status"] == "ok"]["tvd_2way"]
                    if len(good):
                        m[a, b] = good.mean()
                        dark = (m[a, b] - vmin) / (vmax - vmin) > 0.6  # viridis_r is dark at the top end
                        text = f"{m[a, b]:.3f}"
                        if len(good) < len(c):  # a mean of the survivors is not the cell's mean: say so
                            text += f"\n{len(good)}/{len(c)} seeds"
                            partial.append((ds, eps, s, mo, len(good), len(c)))
                        ax.text(b, a, text, ha="center", va="center", fontsize=7,
                                color="white" if dark else "black")
                    elif len(c):
                        ax.text(b, a, c["status"].iloc[0], ha="center", va="center", fontsize=6, color="grey")
            im = ax.imshow(m, cmap="viridis_r", vmin=vmin, vmax=vmax, aspect="auto")
            ax.set_xticks(range(len(mods)), mods, fontsize=7)
            ax.set_yticks(range(len(sels)), sels if j == 0 else [""] * len(sels), fontsize=7)
            ax.set_title(f"{ds}  eps={eps:g}", fontsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="2-way TVD (held-out, lower is better)")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    if partial:
        warnings.warn(f"{path}: {len(partial)} heatmap cell(s) average fewer seeds than they ran (the others "
                      "failed): " + "; ".join(f"{d} eps={e:g} {s} x {m}: {k}/{n}" for d, e, s, m, k, n in partial[:10]),
                      RuntimeWarning, stacklevel=2)
    return True


def summary_table(res: pd.DataFrame, value: str = "tvd_2way", index: str = "selector", columns: str = "model",
                  digits: int = 3, warn: bool = True) -> pd.DataFrame:
    """The grid's cells as a printable ``index`` x ``columns`` table of the mean ``value`` over their
    successful rows (every other dimension pooled: datasets, epsilons, seeds).

    A mean over fewer rows than the group ran says so (``0.412 n=5/6``, and a RuntimeWarning lists
    them): the failed seeds are missing from it, not averaged in.  A group with no successful row is
    ``-`` (missing), never 0.

    Parameters
    ----------
    res : DataFrame
        Rows of :func:`synthzoo.bench.grid` or :func:`synthzoo.bench.distributed.grid_result`.
    value : str, default "tvd_2way"
        The column averaged.
    index, columns : str
        The table's rows and columns.
    digits : int, default 3
        Decimals shown.
    warn : bool, default True
        Warn listing the means over fewer rows than ran (off for a second table of the same rows).

    Returns
    -------
    DataFrame
        Strings, one per ``index`` x ``columns`` group (empty where ``res`` has no such group).
    """
    import warnings

    cells = res[res["kind"] == "cell"]
    ok = cells["status"] == "ok"
    g = pd.DataFrame({"i": cells[index], "c": cells[columns], "ok": ok,
                      "v": cells[value].where(ok)}).groupby(["i", "c"], sort=False)
    n, n_ok, mean = g.size(), g["ok"].sum(), g["v"].mean()
    text = {}
    for key in n.index:
        k, m = int(n_ok[key]), int(n[key])
        text[key] = "-" if k == 0 else f"{mean[key]:.{digits}f}" + (f" n={k}/{m}" if k < m else "")
    partial = [f"{i} x {c}: {int(n_ok[(i, c)])}/{int(n[(i, c)])}" for i, c in n.index if 0 < n_ok[(i, c)] < n[(i, c)]]
    if partial and warn:
        warnings.warn(f"{value}: {len(partial)} cell(s) average fewer rows than they ran (the others failed): "
                      + "; ".join(partial[:10]), RuntimeWarning, stacklevel=2)
    out = pd.Series(text, dtype=object).unstack()
    return out.reindex(index=list(dict.fromkeys(cells[index])),
                       columns=list(dict.fromkeys(cells[columns]))).fillna("")  # "": not in the grid
