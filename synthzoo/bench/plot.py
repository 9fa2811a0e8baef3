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
