"""The shortcuts that keep ``evaluate`` fast give the numbers the slow computations give: shared
model fits and neighbour searches, the SELF baseline's values known by construction, and the
thread-safe memo behind them."""

from __future__ import annotations

import importlib
import threading
import time

import numpy as np
import pandas as pd
import pytest

from synthzoo.core import Schema
from synthzoo.metrics import evaluate, ml_scores
from synthzoo.metrics import ml as ml_mod
from synthzoo.metrics._common import OnceCache
from synthzoo.metrics.baselines import baseline_tables
from synthzoo.metrics.evaluate import _ZERO_FOR_IDENTICAL, PRESETS, _score_table


def toy(n=900, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    c = np.where(x + 0.4 * rng.normal(size=n) > 0, "hi", "lo")
    y = np.where(rng.random(n) < 0.1, np.nan, np.round(rng.uniform(0, 10, n)))
    z = np.round(rng.uniform(0, 5, n) + 2 * (c == "hi"), 1)
    g = rng.choice(["a", "b", "c"], size=n)
    df = pd.DataFrame({"x": np.clip(x, -4, 4), "c": c, "y": y, "z": z, "g": g})
    schema = Schema.from_dict({"columns": {
        "x": {"type": "numerical", "lower": -4, "upper": 4},
        "c": {"type": "categorical", "categories": ["hi", "lo"]},
        "y": {"type": "numerical", "lower": 0, "upper": 10, "integer": True, "missing": True},
        "z": {"type": "numerical", "lower": 0, "upper": 7},
        "g": {"type": "categorical", "categories": ["a", "b", "c"]}}})
    schema.meta.update(target="c", task="binary classification")
    return df, schema


def test_once_cache_computes_each_key_once_across_threads():
    cache, calls = OnceCache(), []

    def slow():
        calls.append(1)
        time.sleep(0.05)
        return len(calls)
    out = []
    threads = [threading.Thread(target=lambda: out.append(cache.get("k", slow))) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert calls == [1] and out == [1] * 6
    # a failing computation leaves the key free for the next caller
    with pytest.raises(ZeroDivisionError):
        cache.get("bad", lambda: 1 / 0)
    assert cache.get("bad", lambda: 7) == 7
    small = OnceCache(max_items=2)
    for k in range(5):
        small.get(k, lambda: k)
    assert len(small) == 2 and 4 in small and 0 not in small


def test_ml_release_equal_to_training_rows_reuses_the_real_fits(monkeypatch):
    df, schema = toy()
    train, test = df.iloc[:700].reset_index(drop=True), df.iloc[700:].reset_index(drop=True)
    ml_mod._FIT_CACHE.clear()
    fits = []
    real_fit = ml_mod._fit_score
    monkeypatch.setattr(ml_mod, "_fit_score", lambda *a: fits.append(a[0]) or real_fit(*a))
    sc = ml_scores(train, train.copy(), test, schema, evaluators=("linear", "gbm"))
    assert sorted(fits) == ["gbm", "linear"]  # one fit per evaluator: the copy is the real rows
    assert np.array_equal(sc["synthetic"], sc["real"]) and (sc["gap"] == 0).all()
    # the cached numbers are the uncached computation's
    ml_mod._FIT_CACHE.clear()
    fake = train.sample(frac=1.0, replace=True, random_state=3).reset_index(drop=True)
    a = ml_scores(train, fake, test, schema, evaluators=("linear", "gbm"))
    n = len(fits)
    b = ml_scores(train, fake, test, schema, evaluators=("linear", "gbm"))
    assert len(fits) == n  # nothing refitted
    pd.testing.assert_frame_equal(a, b)


def _fresh(real, rel, test, schema, names, opts, ml_train):
    """One table scored alone: no memo shared with other tables, no cached fit."""
    ml_mod._FIT_CACHE.clear()
    out = _score_table(real, rel, test, schema, names, opts, ml_train=ml_train)
    return {k: v for k, v in out.items() if not k.startswith("_")}


@pytest.mark.parametrize("metric_set", ["default", "privacy", "full"])
def test_evaluate_with_shared_work_equals_each_table_scored_alone(metric_set):
    """The release and its three baselines share fits and searches in ``evaluate``, and their metrics
    run as units side by side, some in parts; every value must be what scoring that table on its own,
    in one piece, gives -- to the last digit."""
    ev_mod = importlib.import_module("synthzoo.metrics.evaluate")  # the package exports the function
    df, schema = toy()
    train, test = df.iloc[:700].reset_index(drop=True), df.iloc[700:].reset_index(drop=True)
    fake = train.sample(frac=1.0, replace=True, random_state=5).reset_index(drop=True)
    metrics = None if metric_set == "default" else PRESETS[metric_set]
    kw = dict(evaluators=("linear", "gbm"), n_attacks=150, cv_evaluators=("linear", "gbm"), attr_trees=5,
              nnaa_resamples=2)
    ev_mod._BASELINE_CACHE.clear()
    ml_mod._FIT_CACHE.clear()
    table = evaluate(train, fake, test=test, schema=schema, metrics=metrics, **kw).set_index("metric")
    opts = dict(seed=0, n_queries=1000, evaluators=kw["evaluators"], wasserstein_rows=2000, n_attacks=150,
                cv_evaluators=kw["cv_evaluators"], nnaa_resamples=2, attr_trees=5, attr_rows=10_000)
    names = list(table.index)
    alone = {"value": _fresh(train, fake, test, schema, names, opts, None)}
    tabs = baseline_tables(train, 0)
    for b in ("HALF", "INDEPENDENT"):
        alone[b] = _fresh(tabs[b][0], tabs[b][1], test, schema, names, opts, train)
    # SELF alone: the training rows against a copy of themselves, so no shortcut for a table
    # against itself applies -- the slow computation the shortcuts must reproduce
    alone["SELF"] = _fresh(train, train.copy(), test, schema, names, opts, train)
    for col, vals in alone.items():
        for m in names:
            got, want = table.loc[m, col], vals[m][0]
            if col == "SELF" and m in _ZERO_FOR_IDENTICAL:  # 0 by definition; a copy computes ~0
                assert got == 0 and want == pytest.approx(0, abs=1e-6), (m, want)
                continue
            assert got == want or (np.isnan(got) and np.isnan(want)), (col, m, got, want)


def test_min_hamming_by_one_hot_products_equals_the_direct_count():
    from synthzoo.metrics.mia import _min_hamming
    rng = np.random.default_rng(1)
    sizes = np.array([3, 7, 2, 21, 5])
    q, ref = rng.integers(0, sizes, (300, 5)), rng.integers(0, sizes, (700, 5))
    ref[:40] = q[:40]  # some exact copies (distance 0)
    direct = (q[:, None, :] != ref[None, :, :]).sum(-1).min(1)
    assert np.array_equal(_min_hamming(q, ref, block=64), direct)


@pytest.mark.parametrize("n_a,n_b", [(120, 97), (1, 40), (2, 2), (90, 65)])
def test_pair_and_triangle_searches_equal_the_plain_searches(n_a, n_b):
    """One pass for both directions, and the upper triangle for a table against itself, give the
    plain searches' distances and neighbours exactly (duplicates and missing values included)."""
    from synthzoo.metrics.distance import GowerSpace
    df, schema = toy(1000, seed=4)
    a = df.iloc[:n_a].reset_index(drop=True)
    b = pd.concat([df.iloc[n_a:n_a + n_b - n_b // 3], a.iloc[: n_b // 3]], ignore_index=True)  # copies of a's rows
    a = pd.concat([a, a.iloc[: n_a // 4]], ignore_index=True)  # duplicates within a
    for weights in (None, [2.5, 0.3, 1e16, 1.7, 1.0]):
        for compiled in (False, True):
            _check_pair_and_self(GowerSpace(schema, weights=weights, compiled=compiled),
                                 GowerSpace(schema, weights=weights, compiled=False), a, b)


def _check_pair_and_self(sp, plain, a, b):
    """``sp``'s pair and triangle searches against ``plain``'s one-direction numpy searches."""
    ea, eb = sp.encode(a), sp.encode(b)
    pa, pb = plain.encode(a), plain.encode(b)
    for block_rows in (None, 7):
        if block_rows:
            sp._block_rows = lambda n: block_rows  # many blocks, a last one of a single row
        fwd, bwd = sp.nearest_pair(ea, eb)
        for got, want in ((fwd, plain.nearest(pa, pb, 2, block_rows)), (bwd, plain.nearest(pb, pa, 2, block_rows))):
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        got, want = sp.nearest_self(ea), plain.nearest(pa, pa, 2, block_rows)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def _messy_tables(n_a=150, n_b=130, seed=7):
    """Two toy tables with duplicates, copies across them, missing values in a numeric and a
    categorical column, and values outside the schema (which match nothing) in the second."""
    df, schema = toy(1000, seed=seed)
    schema = Schema([schema[c] for c in ("x", "c", "y", "z")] +
                    [Schema.from_dict({"columns": {"g": {"type": "categorical", "categories": ["a", "b", "c"],
                                                         "missing": True}}})["g"]])
    df.loc[::11, "g"] = np.nan
    a = df.iloc[:n_a].reset_index(drop=True)
    b = pd.concat([df.iloc[n_a:n_a + n_b - 40], a.iloc[:40]], ignore_index=True)
    a = pd.concat([a, a.iloc[:20]], ignore_index=True)
    b.loc[::17, "g"] = "zz"  # out of the schema
    b.loc[::13, "x"] = 9.0  # beyond the public bounds
    return a, b, schema


@pytest.mark.parametrize("weights", [None, [2.5, 0.3, 1e16, 1.7, 1.0]])
def test_compiled_searches_equal_the_numpy_blocks(weights):
    """The compiled one- and two-neighbour searches give the numpy blocks' distances and neighbours
    bit for bit (the sums run in the same order), ties, missing values and unknown categories
    included, for every column kind on its own too."""
    from synthzoo.metrics._common import OutOfSchemaWarning
    from synthzoo.metrics.distance import GowerSpace
    a, b, schema = _messy_tables()
    for cols in (schema.names, ["x", "y", "z"], ["c", "g"], ["y"]):
        sub = Schema([schema[c] for c in cols])
        w = None if weights is None else [weights[schema.names.index(c)] for c in cols]
        fast, plain = GowerSpace(sub, weights=w), GowerSpace(sub, weights=w, compiled=False)
        assert fast.compiled and not plain.compiled
        with pytest.warns(OutOfSchemaWarning) if {"g", "x"} & set(cols) else _no_warning():
            ea, eb, pa, pb = fast.encode(a[cols]), fast.encode(b[cols]), plain.encode(a[cols]), plain.encode(b[cols])
        for k in (1, 2):
            for (q, r), (pq, pr) in (((ea, eb), (pa, pb)), ((eb, ea), (pb, pa)), ((ea, ea), (pa, pa))):
                got, want = fast.nearest(q, r, k), plain.nearest(pq, pr, k)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (cols, k)
        for got, want in zip(fast.nearest_pair(ea, eb), plain.nearest_pair(pa, pb)):
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), cols
        for got, want in zip(fast.nearest_self(eb), plain.nearest_self(pb)):
            assert np.array_equal(got, want), cols


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_number_category_transport_on_the_sparse_graph_equals_the_dense_solver():
    """A (number, category) pair's Wasserstein distance from the sparse graph is the dense transport
    problem's optimum, to rounding: unequal sample sizes, repeated points, a category on one side
    only, numbers beyond the public bounds."""
    from synthzoo.metrics.wasserstein import _emd, _emd_number_category
    rng = np.random.default_rng(3)
    for n_r, n_s, k in ((400, 250, 5), (300, 300, 2), (120, 500, 9)):
        r = np.c_[np.round(rng.uniform(0, 1, n_r), 2), rng.integers(0, k, n_r)]
        s = np.c_[np.round(rng.uniform(-0.2, 1.3, n_s) ** 2, 3), rng.integers(0, k + 1, n_s)]
        dense = _emd(r, s, np.array([False, True]))
        assert _emd_number_category(r, s) == pytest.approx(dense, rel=1e-12, abs=1e-15)
    same = np.c_[rng.uniform(0, 1, 200), rng.integers(0, 3, 200)]
    assert _emd_number_category(same, same[::-1]) == pytest.approx(0.0, abs=1e-15)


def test_transport_by_pricing_equals_the_dense_solver():
    """A marginal's transport problem solved on a few arcs and priced against the duals has the dense
    problem's optimum, to rounding: numbers with missing values, ties, a category, numbers beyond
    the public bounds, unequal sample sizes, one column and two."""
    from synthzoo.metrics import wasserstein as W
    rng = np.random.default_rng(5)

    def column(n, kind):
        if kind == "cat":
            return rng.integers(0, 4, n).astype(float)
        x = np.round(rng.normal(0.5, 0.3, n), 3 if kind == "ties" else 8)
        x[rng.random(n) < 0.1] = np.nan
        return x

    cases = [(("num",), 900, 700), (("num", "num"), 800, 800), (("ties", "num"), 700, 900),
             (("num", "cat"), 900, 600), (("ties", "ties"), 1000, 1000)]
    for kinds, n_r, n_s in cases:
        r = np.stack([column(n_r, k) for k in kinds], axis=1)
        s = np.stack([column(n_s, k) for k in kinds], axis=1)
        is_cat = np.array([k == "cat" for k in kinds])
        ur, cr = W._unique_counted(r)
        us, cs = W._unique_counted(s)
        assert len(ur) * len(us) > W._PRICING_FROM  # the pricing path, not the dense solver
        priced = W._emd_by_pricing(ur, cr, us, cs, is_cat)
        cost = sum(W._column_cost(ur[:, k], us[:, k], bool(is_cat[k])) for k in range(len(kinds)))
        dense = float(W._pot().emd2(cr / cr.sum(), cs / cs.sum(), cost, numItermax=10_000_000))
        assert priced is not None and priced == pytest.approx(dense, rel=1e-12, abs=1e-15), kinds
    same = np.c_[rng.uniform(0, 1, 600), rng.uniform(0, 1, 600)]
    u, c = W._unique_counted(same)
    assert W._emd_by_pricing(u, c, u[::-1], c[::-1], np.array([False, False])) == pytest.approx(0.0, abs=1e-12)


def test_transport_by_pricing_converges_with_values_far_beyond_the_bounds():
    # an hmeq release with 4.5 % of a column up to 330 times its public range (a dp_schema bound far out):
    # the duals' rounding grows with the costs (reduced costs of -2.5e-9 against a test at -1e-9), so the
    # pricing went on for all its 100 rounds, 33 s a pair, and then the dense solver ran anyway; the test
    # is now scaled to the largest cost.  Here: numbers 1e5 times the bounds' range, with missing values
    from synthzoo.metrics import wasserstein as W
    rng = np.random.default_rng(0)
    n = 1500
    real, fake = (np.c_[rng.integers(0, 2, n), np.where(rng.random(n) < 0.1, np.nan, rng.uniform(0, 1e5, n))]
                  for _ in range(2))
    is_cat = np.array([True, False])
    ur, cr = W._unique_counted(real)
    us, cs = W._unique_counted(fake)
    priced = W._emd_by_pricing(ur, cr, us, cs, is_cat, rounds=40)  # 40 rounds ran out before
    cost = W._column_cost(ur[:, 0], us[:, 0], True) + W._column_cost(ur[:, 1], us[:, 1], False)
    dense = float(W._pot().emd2(cr / cr.sum(), cs / cs.sum(), cost, numItermax=10_000_000))
    assert priced is not None and priced == pytest.approx(dense, rel=1e-9)


def test_one_number_with_missing_values_on_all_rows_equals_the_dense_solver():
    """A number column with missing values is solved exactly on every row as a flow along its line
    of values: the dense problem's optimum to rounding, with missing values on either side, on both,
    on neither, all missing, ties, unequal sizes and values beyond the bounds; values more than 2
    apart (where the line's cost is not the ground cost) go back to the dense solver."""
    from synthzoo.metrics import wasserstein as W
    rng = np.random.default_rng(11)

    def dense(x, y):
        ux, cx = W._unique_counted(x[:, None])
        uy, cy = W._unique_counted(y[:, None])
        cost = W._column_cost(ux[:, 0], uy[:, 0], False)
        return float(W._pot().emd2(cx / cx.sum(), cy / cy.sum(), cost, numItermax=10_000_000))

    for case in range(60):
        n, m = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        x = np.round(rng.uniform(0, 1, n), int(rng.integers(1, 6)))
        y = np.round(rng.uniform(-0.4, 1.3, m) if case % 3 else rng.beta(2, 5, m), int(rng.integers(1, 6)))
        x[rng.random(n) < [0.0, 0.3, 0.0, 0.6][case % 4]] = np.nan
        y[rng.random(m) < [0.2, 0.0, 0.0, 0.5][case % 4]] = np.nan
        if case == 5:
            x[:] = np.nan
        got = W._one_number_with_missing(x, y)
        assert got is not None and got == pytest.approx(dense(x, y), rel=1e-12, abs=1e-14), case
        assert W._one_number_with_missing(y, x) == pytest.approx(got, rel=1e-12, abs=1e-14)
    x = np.r_[0.0, 2.5, np.nan]
    assert W._one_number_with_missing(x, np.r_[0.5, 1.0]) is None
    assert W._one_number_with_missing(np.full(4, np.nan), np.full(3, np.nan)) == 0.0
    # through the metric: a column with missing values scores the same whatever the sample size
    df, schema = toy(900, seed=4)
    real, fake = df.iloc[:500].reset_index(drop=True), df.iloc[500:].reset_index(drop=True)
    marg = [W.wasserstein_marginals(real, fake, schema, max_rows=rows, ways=(1,)) for rows in (50, None)]
    pd.testing.assert_frame_equal(*marg)


def test_wasserstein_in_parts_gives_the_one_call_value(monkeypatch):
    """evaluate computes a table's marginals in parts on its threads; put back together, the mean is
    the one-call value to the last digit, and the sparse solver (forced here for every number x
    category pair) agrees with the dense one to rounding."""
    from synthzoo.metrics import wasserstein as W
    df, schema = toy(900, seed=2)
    real, fake = df.iloc[:500].reset_index(drop=True), df.iloc[500:].reset_index(drop=True)
    fake["y"] = fake["y"].fillna(3.0)  # one number x category pair without missing values on either side
    real["y"] = real["y"].fillna(5.0)
    whole = W.wasserstein_fidelity(real, fake, schema)
    for n in (1, 2, 3, 7):
        parts = [((i, n), W.wasserstein_marginals(real, fake, schema, part=(i, n))) for i in range(n)]
        assert W.fidelity_of_parts(parts[::-1]) == whole
    with pytest.raises(ValueError, match="needs the parts 0..2 of 3"):
        W.fidelity_of_parts([((0, 3), parts[0][1]), ((2, 3), parts[0][1])])
    dense = W.wasserstein_marginals(real, fake, schema)
    monkeypatch.setattr(W, "_SPARSE_FROM", 0)
    sparse = W.wasserstein_marginals(real, fake, schema)
    assert (sparse["kind"] == "cat-num").sum() >= 4
    np.testing.assert_allclose(sparse["distance"], dense["distance"], rtol=1e-12, atol=1e-15)


def test_quiet_library_warnings_holds_while_any_thread_is_inside():
    """Two threads silencing the libraries' warnings in overlapping blocks: the second thread's
    warning stays silenced after the first one leaves (with ``warnings.catch_warnings`` the first
    to leave restored the filters it found, and an lbfgs ConvergenceWarning escaped ``synthzoo
    eval``), other warnings still show, and the filters are as before once both are done."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from synthzoo.core.errors import quiet_library_warnings
    inside, leave = threading.Event(), threading.Event()

    def first():
        with quiet_library_warnings():
            inside.set()
            leave.wait()

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        t = threading.Thread(target=first)
        t.start()
        inside.wait()
        with quiet_library_warnings():
            leave.set()
            t.join()  # the first thread has left; this one is still inside
            warnings.warn("lbfgs failed to converge", ConvergenceWarning)
            warnings.warn("synthzoo's own", UserWarning)
        after = list(warnings.filters)
    assert [w.category for w in shown] == [UserWarning]
    assert after == before


def test_a_unit_waiting_for_a_shared_result_lets_another_unit_run():
    """Two work slots, three threads: B computes a shared value that A needs; while A waits, its slot
    goes to C (which here is what B waits for: without the hand-over the three would deadlock)."""
    from synthzoo.metrics._common import WorkSlots
    slots, cache = WorkSlots(2), OnceCache()
    b_owns, go, c_ran, out = threading.Event(), threading.Event(), threading.Event(), {}

    def b():
        with slots.run():
            def compute():
                b_owns.set()
                assert go.wait(10)
                return 42
            out["b"] = cache.get("k", compute)

    def a():
        assert b_owns.wait(10)
        with slots.run():
            out["a"] = cache.get("k", lambda: -1)  # B's value, not a recomputation

    def c():
        assert b_owns.wait(10)
        time.sleep(0.05)  # A takes its slot first
        with slots.run():
            c_ran.set()
            out["running_with_c"] = slots.running
            go.set()

    threads = [threading.Thread(target=f) for f in (b, a, c)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(20)
    assert c_ran.is_set() and out == {"b": 42, "a": 42, "running_with_c": 2}
    assert slots.running == 0


def test_work_slots_are_given_in_the_order_asked():
    """A thread waiting for a slot is not overtaken by one that asks later -- here the thread that
    just gave the slot up and asks again at once (evaluate's units arrive longest first: a long unit
    overtaken again and again ran last, and the evaluation waited for it)."""
    from synthzoo.metrics._common import WorkSlots
    slots, order, b_queued = WorkSlots(1), [], threading.Event()

    def a():
        with slots.run():
            order.append("A1")
            assert b_queued.wait(10)
            while not slots._queue:
                time.sleep(0.001)
        with slots.run():  # asks again right after giving the slot up
            order.append("A2")

    def b():
        while not order:
            time.sleep(0.001)
        b_queued.set()
        with slots.run():
            order.append("B")

    threads = [threading.Thread(target=f) for f in (a, b)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert order == ["A1", "B", "A2"]


def test_baseline_cache_is_keyed_on_the_whole_schema():
    """Two evaluations of the same frames under schemas with different targets must not share
    baselines: before the fix the second call got the first target's HALF/INDEPENDENT/SELF ML scores."""
    E = importlib.import_module("synthzoo.metrics.evaluate")
    df, schema = toy(600)
    train, test, syn = df.iloc[:300], df.iloc[300:450], df.iloc[450:].reset_index(drop=True)
    other = Schema([schema[c] for c in schema.names],
                   {**schema.meta, "target": "g", "task": "multiclass classification"})
    kw = dict(metrics=["ml_f1"], evaluators=("linear",), seed=0)
    E._BASELINE_CACHE.clear()
    evaluate(train, syn, test=test, schema=schema, **kw)
    cached = evaluate(train, syn, test=test, schema=other, **kw).set_index("metric")
    E._BASELINE_CACHE.clear()
    fresh = evaluate(train, syn, test=test, schema=other, **kw).set_index("metric")
    for b in ("HALF", "INDEPENDENT", "SELF"):
        assert cached.loc["ml_f1", b] == fresh.loc["ml_f1", b], b


def test_first_threaded_evaluate_in_a_fresh_process_does_not_deadlock_on_imports():
    """Worker threads importing sklearn.metrics at once raised ``_DeadlockError`` (3 of 3 fresh
    processes before the fix); evaluate now imports the metrics' lazy dependencies before its
    threads start."""
    import os
    import subprocess
    import sys

    import synthzoo
    root = os.path.dirname(os.path.dirname(synthzoo.__file__))
    code = ("import synthzoo as sz\nfrom synthzoo.datasets import make_demo\n"
            "tr, s = make_demo(300, seed=0); syn, _ = make_demo(300, seed=2); te, _ = make_demo(100, seed=1)\n"
            "sz.evaluate(tr, syn, test=te, schema=s, metrics=['mia_max_auc', 'mia_tpr_1pct', 'mia_classifier_f1'],"
            " baselines=False, n_jobs=2)\nprint('ok')\n")
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_attribute_disclosure_threads_start_after_the_lazy_imports_in_a_fresh_process():
    """``attribute_disclosure(n_jobs=2)`` runs its forests on joblib threads; like ``evaluate`` it
    must import the metrics' lazy dependencies (the one guard, ``import_lazy_dependencies``)
    before the first of them starts, or two of them may import one package at once (the
    ``_DeadlockError`` the evaluate test above guards against)."""
    import os
    import subprocess
    import sys

    import synthzoo
    root = os.path.dirname(os.path.dirname(synthzoo.__file__))
    # every thread start (joblib's pool threads are threading.Thread) records which lazy
    # dependencies were still missing at that moment
    code = ("import sys, threading\nfrom synthzoo.metrics._common import LAZY_IMPORTS\nstarts = []\n"
            "start = threading.Thread.start\n"
            "def recorded(self):\n"
            "    starts.append([m for m in LAZY_IMPORTS if m not in sys.modules])\n"
            "    return start(self)\n"
            "threading.Thread.start = recorded\n"
            "from synthzoo.datasets import make_demo\nfrom synthzoo.metrics import attribute_disclosure\n"
            "tr, s = make_demo(300, seed=0); syn, _ = make_demo(300, seed=2)\n"
            "attribute_disclosure(tr, syn, s, n_estimators=4, n_jobs=2)\n"
            "print(len(starts), sorted({m for missing in starts for m in missing}))\n")
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    started, missing = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(started) > 0 and missing == "[]", out.stdout


#: records every module first imported on a thread other than the main one (a meta-path finder
#: sees each import of a module not yet in sys.modules, and finds nothing itself)
_IMPORT_SPY = """
import sys, threading
first_in_thread = []
class _Spy:
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            first_in_thread.append(name)
        return None
sys.meta_path.insert(0, _Spy())
"""
#: the libraries whose concurrent first import deadlocked; numba's own typing modules are left out:
#: numba imports them while compiling, under its global compiler lock, so they never race
_GUARDED = ("sklearn", "scipy", "synthzoo", "lightgbm", "ot", "xgboost", "catboost")


def test_synthzoo_eval_in_a_fresh_process_imports_nothing_on_its_worker_threads(tmp_path):
    """``synthzoo eval`` (like ``evaluate_files`` and ``risk_response``) reaches the worker threads
    through ``evaluate``: in a fresh process no sklearn/scipy/synthzoo/... module may be imported
    first on a worker thread -- the deadlock needs two threads in one first import, so a module
    imported there is the hazard whether or not this run hits it (the evaluate test above fails
    only when the race does)."""
    import os
    import subprocess
    import sys

    import synthzoo
    from synthzoo.datasets import make_demo

    tr, s = make_demo(300, seed=0)
    make_demo(300, seed=2)[0].to_csv(tmp_path / "syn.csv", index=False)
    make_demo(100, seed=1)[0].to_csv(tmp_path / "test.csv", index=False)
    tr.to_csv(tmp_path / "train.csv", index=False)
    s.to_json(tmp_path / "schema.json")
    args = ["eval", str(tmp_path / "train.csv"), str(tmp_path / "syn.csv"), "--test", str(tmp_path / "test.csv"),
            "--schema", str(tmp_path / "schema.json"), "--out", str(tmp_path / "r.html"),
            "--metrics", "wasserstein,ml_f1,dcr_risk,mia_max_auc,mia_classifier_f1,attr_disclosure"]
    code = (_IMPORT_SPY + "from synthzoo.cli import main\n"
            f"rc = main({args!r})\n"
            f"bad = sorted({{n for n in first_in_thread if n.split('.')[0] in {_GUARDED!r}}})\n"
            "print('rc', rc, 'imported on worker threads:', bad)\n")
    root = os.path.dirname(os.path.dirname(synthzoo.__file__))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    assert last == "rc 0 imported on worker threads: []", (last[:3000], out.stderr[-2000:])
