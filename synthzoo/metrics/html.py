"""The self-contained HTML report of ``synthzoo eval``: per-column plots, the association-difference
heatmap and the metric table of :func:`synthzoo.metrics.evaluate`, written to one file."""

from __future__ import annotations

import base64
import html
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import resolve_schema
from .association import association_matrices
from .evaluate import evaluate


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _column_plots(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> list[tuple[str, str]]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ._common import category_codes, numeric_array
    out = []
    for col in schema.columns:
        fig, ax = plt.subplots(figsize=(4.2, 2.6))
        if col.kind == "categorical":
            k = len(col.categories)
            labels = list(col.categories) + ["(missing)", "(outside schema)"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rc = category_codes(real[col.name], col, "real", warn=False)
                sc = category_codes(synth[col.name], col, "synthetic", warn=False)
            size = k + 2
            hr = np.bincount(rc, minlength=size) / len(rc)
            hs = np.bincount(sc, minlength=size) / len(sc)
            keep = [i for i in range(size) if (i < k or (i == k and col.missing) or hr[i] + hs[i] > 0)]
            keep = sorted(keep, key=lambda i: -hr[i])[:20]  # the 20 most frequent real categories
            x = np.arange(len(keep))
            ax.bar(x - 0.2, hr[keep], 0.4, label="real")
            ax.bar(x + 0.2, hs[keep], 0.4, label="synthetic")
            ax.set_xticks(x)
            ax.set_xticklabels([labels[i] for i in keep], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("share")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = numeric_array(real[col.name], col, "real", warn=False)
                s = numeric_array(synth[col.name], col, "synthetic", warn=False)
            r, s = r[~np.isnan(r)], s[~np.isnan(s)]
            both = np.concatenate([r, s])
            if both.size:
                lo, hi = np.quantile(both, [0.005, 0.995])
                if col.integer and hi - lo <= 80:  # one bar per integer: no empty comb bins
                    edges = np.arange(np.floor(lo) - 0.5, np.ceil(hi) + 1.0)
                else:
                    edges = np.linspace(lo, hi if hi > lo else lo + 1, 41)
                ax.hist(np.clip(r, lo, hi), bins=edges, alpha=0.55, density=True, label="real")
                ax.hist(np.clip(s, lo, hi), bins=edges, alpha=0.55, density=True, label="synthetic")
            ax.set_ylabel("density")
        ax.set_title(col.name, fontsize=9)
        ax.legend(fontsize=7)
        out.append((col.name, _png(fig)))
    return out


def _heatmap(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = association_matrices(real, synth, schema)
    d = (a - b).abs()
    n = len(d)
    fig, ax = plt.subplots(figsize=(0.45 * n + 2.5, 0.45 * n + 1.5))
    im = ax.imshow(d.to_numpy(), cmap="Reds", vmin=0, vmax=max(0.3, float(d.to_numpy().max())))
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(d.columns, rotation=70, ha="right", fontsize=7)
    ax.set_yticklabels(d.index, fontsize=7)
    for i in range(n):
        for j in range(n):
            if i != j:
                ax.text(j, i, f"{d.iat[i, j]:.2f}", ha="center", va="center", fontsize=5)
    fig.colorbar(im, ax=ax, shrink=0.7, label="|assoc(real) - assoc(synthetic)|")
    ax.set_title("Pairwise association differences", fontsize=9)
    return _png(fig)


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    ax = abs(x)
    return f"{x:.4g}" if ax >= 1e-3 or ax == 0 else f"{x:.2e}"


def _verdict(row) -> str:
    """Where the value sits between the HALF floor and the INDEPENDENT/SELF reference."""
    v = row["value"]
    if row["group"] == "privacy":
        ref_lo, ref_hi = row.get("HALF"), row.get("SELF")
    else:
        ref_lo, ref_hi = row.get("HALF"), row.get("INDEPENDENT")
    if any(x is None or (isinstance(x, float) and np.isnan(x)) for x in (v, ref_lo, ref_hi)) or ref_lo == ref_hi:
        return ""
    pos = (v - ref_lo) / (ref_hi - ref_lo)
    if row["group"] == "privacy":
        return "like a non-member release" if pos < 0.1 else ("close to copying" if pos > 0.5 else "some leakage")
    return "near the real-data floor" if pos < 0.25 else ("no better than independent columns" if pos > 0.9 else "in between")


def write_html_report(path, table: pd.DataFrame, train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema,
                      title: str = "synthzoo evaluation report", notes: dict | None = None) -> Path:
    """Write a self-contained HTML page (plots embedded as base64 PNG): the metric table with
    its baselines, per-column distributions real vs synthetic and a heatmap of pairwise
    association differences."""
    path = Path(path)
    schema = resolve_schema(schema, train)
    cols = ["metric", "value", "ci_low", "ci_high", "HALF", "INDEPENDENT", "SELF", "better"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:24px;max-width:1300px}"
             "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px}"
             "th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}"
             ".grid{display:flex;flex-wrap:wrap;gap:6px}.muted{color:#666;font-size:12px}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p class='muted'>train rows: {len(train):,} &middot; synthetic rows: {len(synthetic):,} &middot; "
             f"columns: {len(schema)}. Baselines: HALF = two halves of the real rows (the floor sampling noise "
             "allows), INDEPENDENT = each column resampled alone (no correlations), SELF = the training rows "
             "released as they are (perfect fidelity, maximal risk).</p>"]
    for group in ("fidelity", "utility", "privacy"):
        sub = table[table["group"] == group]
        if sub.empty:
            continue
        parts.append(f"<h2>{group.capitalize()}</h2><table><tr>" +
                     "".join(f"<th>{c}</th>" for c in cols + ["reading", "description"]) + "</tr>")
        for _, row in sub.iterrows():
            cells = []
            for c in cols:
                v = row.get(c)
                cells.append(f"<td class='num'>{_fmt(v)}</td>" if c not in ("metric", "better")
                             else f"<td>{html.escape(str(v))}</td>")
            cells.append(f"<td>{html.escape(_verdict(row))}</td><td class='muted'>{html.escape(str(row['description']))}</td>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</table>")
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li><b>{html.escape(str(k))}</b>: {html.escape(str(v))}</li>"
                                                    for k, v in notes.items()) + "</ul>")
    parts.append("<h2>Pairwise association differences</h2>")
    parts.append(f"<img src='{_heatmap(train, synthetic, schema)}' alt='association difference heatmap'>")
    parts.append("<h2>Per-column distributions (real vs synthetic)</h2><div class='grid'>")
    for name, src in _column_plots(train, synthetic, schema):
        parts.append(f"<img src='{src}' alt='{html.escape(name)}'>")
    parts.append("</div></body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def evaluate_files(real, synthetic, test=None, schema=None, out="report.html", metrics=None, seed: int = 0,
                   baselines: bool = True, **kw) -> pd.DataFrame:
    """What ``synthzoo eval real.csv fake.csv --test test.csv --schema schema.json --out report.html``
    runs: read CSVs (or take frames), evaluate, write the HTML report to ``out`` and return the
    metric table.  Without a schema one is inferred from the real rows (with a warning: fine for
    evaluation, but not a differentially private schema)."""
    def read(x, role):
        if x is None or isinstance(x, pd.DataFrame):
            return x
        p = Path(x)
        if not p.exists():
            raise ConfigError(f"{role}: file {str(p)!r} not found")
        return pd.read_csv(p)
    real_df, fake_df, test_df = read(real, "real"), read(synthetic, "synthetic"), read(test, "test")
    if schema is None:
        schema = Schema.infer(real_df)
    elif not isinstance(schema, Schema):
        p = Path(schema)
        if not p.exists():
            raise ConfigError(f"schema: file {str(p)!r} not found")
        schema = Schema.from_json(p)
    table, details = evaluate(real_df, fake_df, test=test_df, schema=schema, metrics=metrics, seed=seed,
                              baselines=baselines, return_details=True, **kw)
    notes = {k: f"{v:.1f} s" for k, v in details["timings"].items()}
    notes = {f"time ({k})": v for k, v in notes.items()}
    if test_df is None:
        notes["privacy / ML"] = "no --test rows given: ML and privacy metrics need real held-out rows and were skipped"
    write_html_report(out, table, real_df, fake_df, schema, notes=notes)
    return table
