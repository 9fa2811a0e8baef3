"""TabSyn / DP-TLDM (synthzoo/models/tldm.py): both stages on the ledger, exact per-record clipping
of the token and augmentation-multiplicity layouts, the pieces of the two stages, and learning."""

import json
import math
import warnings

import numpy as np
import pytest

import synthzoo as sz
from helpers import fit_from_the_start, load_as_written_before, schema_features, skewed_table
from synthzoo.datasets import make_demo
from synthzoo.models import TLDM
from synthzoo.models.tldm import SIGMA_MAX, SIGMA_MIN, Tokens, _edm, _vae, edm_sample

QUICK = dict(TLDM._test_params)


@pytest.fixture(scope="module")
def demo():
    return make_demo(n=800, seed=0)


def _fit(df, schema, epsilon, **params):
    return sz.Synthesizer(preprocess=["mode_features"], model={"name": "tldm", **QUICK, **params}, epsilon=epsilon,
                          schema=schema, seed=0).fit(df)


def _ghost_and_loop_norms(module, args_of, b):
    """Opacus' ghost-clipping per-record gradient norms against a loop of one-record backward passes."""
    import torch
    from opacus.grad_sample import GradSampleModuleFastGradientClipping

    wrapped = GradSampleModuleFastGradientClipping(module, max_grad_norm=1.0, loss_reduction="sum",
                                                   use_ghost_clipping=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped(*args_of(slice(0, b))).sum().backward()
    ghost = wrapped.get_norm_sample().detach().clone()
    wrapped.disable_hooks()
    loop = []
    for i in range(b):
        module.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module(*args_of(slice(i, i + 1))).sum().backward()
        loop.append(math.sqrt(sum(float((p.grad ** 2).sum()) for p in module.parameters() if p.grad is not None)))
    wrapped.remove_hooks()
    return ghost.numpy(), np.array(loop)


def test_ghost_clipping_is_exact_per_record_for_tokens_and_noise_levels(demo):
    """Both networks see one record per row of the batch -- the VAE as (batch, tokens, d_token) with
    attention across a record's tokens, the denoiser as (batch, K noise levels, latent) with the loss
    averaged over K -- so Opacus' ghost norms equal each record's own gradient norm."""
    import torch

    df, schema = demo
    tok = Tokens(schema_features(df, schema).table)
    num, codes = (torch.as_tensor(a) for a in tok.split(schema_features(df, schema).x))
    torch.manual_seed(0)
    vae = _vae(torch, tok, 4, 2, 2, 8)  # two heads: the head split is inside the record too
    eps = torch.randn(len(codes), tok.n_tokens + 1, 4)
    ghost, loop = _ghost_and_loop_norms(vae, lambda s: (num[s], codes[s], eps[s], 0.01), 12)
    assert np.allclose(ghost, loop, rtol=1e-4), (ghost, loop)
    dim, k = tok.n_tokens * 4, 5
    edm = _edm(torch, dim, 32)
    y = torch.randn(12, 1, dim).expand(12, k, dim)
    sigma, noise = torch.rand(12, k) * 3 + 0.01, torch.randn(12, k, dim)
    ghost, loop = _ghost_and_loop_norms(edm, lambda s: (y[s], sigma[s], noise[s]), 12)
    assert np.allclose(ghost, loop, rtol=1e-4), (ghost, loop)


def test_private_fit_charges_both_stages_within_the_request(demo):
    """DP-TLDM with honest accounting: the record count, the VAE's DP-SGD, the latent statistics and
    the diffusion stage's DP-SGD are all on the ledger, the report shows each, and the total stays
    within the request; ``stage_split`` moves the budget between the stages."""
    df, schema = demo
    shares = {}
    for split in (0.3, 0.7):
        s = _fit(df, schema, 1.0, stage_split=split, noise_levels=3)
        assert s.privacy_spent().epsilon <= 1.0 * (1 + 1e-9) and s.privacy_spent().epsilon > 0.98
        rows = {r["module"]: r for r in s.ledger_.breakdown()}
        assert {"tldm", "tldm/vae", "tldm/latent_stats", "tldm/diffusion"} <= set(rows)
        assert rows["tldm/vae"]["mechanisms"] == rows["tldm/diffusion"]["mechanisms"] == "dp_sgd"
        assert rows["tldm/latent_stats"]["mechanisms"] == "gaussian"
        report = s.privacy_report()
        assert "tldm/vae" in report and "tldm/diffusion" in report
        notes = [c.note for c in s.ledger_.charges if c.mechanism == "dp_sgd"]
        assert len(notes) == 2 and "VAE" in notes[0] and "diffusion" in notes[1]
        shares[split] = rows["tldm/vae"]["rho"] / (rows["tldm/vae"]["rho"] + rows["tldm/diffusion"]["rho"]
                                                   + rows["tldm/latent_stats"]["rho"])
        assert shares[split] == pytest.approx(split, rel=1e-6)
        assert len(s.sample(50, seed=0)) == 50


def test_private_fit_on_a_table_without_categorical_tokens():
    """Numbers scaled on their bounds with no missing values give no categorical token: the encoder's
    category embedding and the decoder's category read-out are then unused, and (as the scalar layers
    on a table without numbers) must not be trained -- Opacus needs a per-record gradient of every
    trained parameter, and failed inside the VAE's first step, after the count and both stages' budgets
    were charged."""
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(0, 10, 400), "b": rng.uniform(0, 5, 400)})
    schema = sz.Schema.from_dict({"columns": {
        "a": {"type": "numerical", "lower": 0, "upper": 10, "missing": False},
        "b": {"type": "numerical", "lower": 0, "upper": 5, "missing": False}}})
    for epsilon in (1.0, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = sz.Synthesizer(preprocess=["features"], model={"name": "tldm", **QUICK}, epsilon=epsilon,
                               schema=schema, seed=0).fit(df)
        assert Tokens(s.encoder_).n_cat == 0
        if epsilon is not None:
            assert 0.9 < s.privacy_spent().epsilon <= epsilon * (1 + 1e-9)
            assert [c.mechanism for c in s.ledger_.charges].count("dp_sgd") == 2
        fake = s.sample(50, seed=1)
        assert len(fake) == 50 and fake["a"].between(0, 10).all() and fake["b"].between(0, 5).all()


def test_non_private_fit_records_every_read_and_the_public_scale_reads_nothing(demo):
    df, schema = demo
    s = _fit(df, schema, None)
    mech = {(c.module, c.mechanism) for c in s.ledger_.charges}
    assert {("tldm", "record_count"), ("tldm/vae", "dp_sgd"), ("tldm/latent_stats", "latent_stats"),
            ("tldm/diffusion", "dp_sgd")} <= mech
    assert not s.privacy_spent().private
    p = _fit(df, schema, 1.0, latent_norm="public")  # the encoder's latents of public records only
    assert "tldm/latent_stats" not in {c.module for c in p.ledger_.charges}
    assert p.privacy_spent().epsilon <= 1.0 * (1 + 1e-9)
    assert not np.allclose(p.model._net.latent_std.numpy(), 1.0)


def test_tokens_round_trip_the_layout(demo):
    """Every slice of the layout is one token; splitting feature rows into numbers and codes and
    writing argmax logits back gives the same rows (scalars to within the atanh clamp)."""
    import torch

    df, schema = demo
    data = schema_features(df, schema)
    tok = Tokens(data.table)
    assert tok.n_tokens == len(data.table.layout)
    num, codes = tok.split(data.x)
    logits = torch.full((len(codes), tok.n_cat, tok.width), -5.0)
    logits.scatter_(2, torch.as_tensor(codes)[:, :, None], 5.0)
    raw = tok.raw(torch, torch.as_tensor(num), logits, argmax=True)
    from synthzoo.models.torch_features import Head

    head = Head(data.table, "cpu")
    back = head.draw(raw, torch.Generator().manual_seed(0))
    real = data.x.copy()
    blocks = [s for s in data.table.layout if s.activation == "softmax"]
    empty = np.zeros(len(real), dtype=bool)
    for s in blocks:  # an all-zero block (the modes of a missing number) reads as its first category
        empty |= real[:, s.start:s.stop].sum(1) == 0
    scalars = [s.start for s in data.table.layout if s.activation == "tanh"]
    real[:, scalars] = np.clip(real[:, scalars], -0.999, 0.999)
    assert np.allclose(back[~empty], real[~empty], atol=1e-5)


def test_denoiser_at_one_noise_level_is_the_per_row_denoiser():
    """The sampler's D(x; sigma) for one level shared by every row (its embedding made once) equals
    the per-row form the training loss uses."""
    import torch

    torch.manual_seed(0)
    edm = _edm(torch, 12, 32).eval()
    x = torch.randn(50, 12)
    with torch.no_grad():
        for sigma in (0.002, 0.37, 80.0):
            want = edm.denoise(x, torch.full((50,), sigma))
            torch.testing.assert_close(edm.denoise(x, sigma), want, rtol=1e-4, atol=1e-5)


def test_edm_sampler_recovers_a_known_gaussian():
    """With the exact denoiser of N(m, s^2) data, EDM's Heun sampler (50 levels, TabSyn's churn)
    draws that Gaussian: the sampler and the preconditioning's conventions agree."""
    import torch

    mean, std = 0.3, 0.5

    class Exact:
        def denoise(self, x, sigma):   # one noise level (a float) for every row
            s2 = sigma ** 2
            return (x * std ** 2 + mean * s2) / (std ** 2 + s2)

    gen = torch.Generator().manual_seed(0)
    x = edm_sample(Exact(), 20_000, 3, 50, gen, "cpu")
    assert abs(float(x.mean()) - mean) < 0.02 and abs(float(x.std()) - std) < 0.02
    assert SIGMA_MIN < SIGMA_MAX


def test_same_model_and_seed_same_sample_and_state_round_trip(demo, tmp_path):
    df, schema = demo
    s = _fit(df, schema, 1.0, noise_levels=2)
    a = s.sample(200, seed=3)
    path = tmp_path / "tldm.json"
    s.save(path)
    text = path.read_text()
    assert "pickle" not in text
    loaded = sz.Synthesizer.load(path)
    assert loaded.sample(200, seed=3).equals(a)
    assert "tldm/diffusion" in loaded.privacy_report()
    # the network is built layer by layer before its shapes meet the saved weights: a file may not ask for 1e9
    doc = json.loads(text)
    doc["model_state"]["params"]["n_layers"] = 10 ** 9
    with pytest.raises(sz.ConfigError, match="n_layers=1000000000 exceeds what a model file may set"):
        sz.Synthesizer.from_json(doc)


def test_non_private_tldm_learns_the_marginals():
    """Non-private TabSyn on the demo table: samples after training match the one-way marginals far
    better than after a single pass of each stage."""
    from synthzoo.metrics import tvd_1way

    df, schema = make_demo(n=2000, seed=2)
    cfg = {"name": "tldm", "d_token": 4, "n_layers": 2, "factor": 8, "width": 64, "vae_batch_size": 256,
           "diffusion_batch_size": 256, "sampling_steps": 20}
    short, long = ({**cfg, "vae_epochs": e, "diffusion_epochs": e} for e in (1, 60))
    fits = [sz.Synthesizer(preprocess=["features"], model=m, epsilon=None, schema=schema, seed=0).fit(df)
            for m in (short, long)]
    t_short, t_long = (tvd_1way(df, f.sample(2000, seed=0), schema) for f in fits)
    assert t_long < 0.6 * t_short, (t_long, t_short)


def test_dp_tldm_preset_exposes_the_stage_split_to_the_tuner():
    from tuning import pipeline_space

    space = pipeline_space(sz.make("dp-tldm"))
    assert space["model.tldm.stage_split"][0] == "float" and "model.tldm.noise_levels" in space


def test_grid_runs_tldm_without_a_selector(tmp_path):
    """`--select none --model tldm`: the ablation grid runs the model (tiny training) within the request."""
    from synthzoo import bench

    df, schema = make_demo(n=600, seed=0)
    csv, sch = tmp_path / "d.csv", tmp_path / "s.json"
    df.to_csv(csv, index=False)
    schema.to_json(sch)
    res = bench.grid(str(csv), schema=str(sch), selectors=["none"], models=[{"name": "tldm", **QUICK}],
                     epsilons=[1.0], seeds=[0], isolate=False, ml=False, references=False, log=lambda _: None)
    assert res["status"].tolist() == ["ok"], res["reason"].tolist()
    assert res["budget_ok"].all() and (res["eps_spent"] > 0.98).all() and res["tvd_2way"].between(0, 1).all()


def test_dp_latent_moments_recover_means_and_overall_scale():
    """The private latent statistics: with little noise, each coordinate's mean and the overall
    scale factor on the public reference's spreads come back; the release is one Gaussian charge."""
    import torch

    from synthzoo.core.privacy.ledger import PrivacyLedger

    gen = torch.Generator().manual_seed(0)
    true_mean, true_std = torch.linspace(-3, 3, 8), torch.linspace(0.5, 1.5, 8)
    z = torch.randn(20_000, 8, generator=gen) * true_std + true_mean
    ref_mean, ref_std = torch.zeros(8), 2.0 * true_std          # the reference: off-centre, twice too wide
    ledger = PrivacyLedger(500.0, 1e-5, noise_seed=1)
    budget = ledger.stage("tldm/diffusion", 1.0)
    mean, std = TLDM(latent_clip=4.0)._dp_moments(torch, z, ref_mean, ref_std, 20_000.0, budget, "tldm/latent_stats")
    assert torch.allclose(mean, true_mean, atol=0.05)
    assert torch.allclose(std, true_std * float((std / true_std).mean()), atol=1e-5)  # one factor
    assert 0.95 < float((std / true_std).mean()) < 1.05
    assert [(c.module, c.mechanism) for c in ledger.charges] == [("tldm/latent_stats", "gaussian")]


def test_dp_latent_moments_move_by_one_records_contribution_only(mechanism_inputs):
    """The Gaussian release of the latent sums is charged at L2 sensitivity sqrt(2 D): a record moves
    them by its own clipped ``(u, sqrt(D) |u|^2 / D)``.  Summed in float32 (the latents' dtype) the
    rounding of a large table's sums moved them by more: removing one record changed them by 4.02 in
    L2 at 1,000,000 rows and 4.14 at 4,000,000 (D = 8, charged sqrt(2 D) = 4)."""
    import torch

    from synthzoo.core.privacy.ledger import PrivacyLedger

    n, dim = 200_000, 8
    z = torch.randn(n, dim, generator=torch.Generator().manual_seed(0)) * 0.5 + 1.5
    z[::97] = 10.0  # clipped in every coordinate: the largest contribution a record can make
    released = mechanism_inputs("gaussian")
    model = TLDM(latent_clip=4.0)

    def sums(rows):
        budget = PrivacyLedger(1.0, 1e-5, noise_seed=0).stage("tldm/diffusion", 1.0)
        model._dp_moments(torch, z[rows], torch.zeros(dim), torch.ones(dim), float(len(rows)), budget,
                          "tldm/latent_stats")
        return released.pop()

    full = sums(torch.arange(n))
    for i in (0, 97 * 1000, n - 2):
        d = full - sums(torch.cat([torch.arange(i), torch.arange(i + 1, n)]))
        u = z[i].double().clamp(-4, 4) / 4
        own = np.concatenate([u.numpy(), [math.sqrt(dim) * float((u ** 2).mean())]])
        assert np.abs(d - own).max() < 1e-6, (i, d, own)
        assert np.linalg.norm(d) <= math.sqrt(2 * dim) * (1 + 1e-9)


@pytest.mark.parametrize("share", [0.05, 0.0])
def test_dp_tldm_starts_its_decoder_at_the_noisy_one_way_frequencies(share):
    """The VAE's DP-SGD moves the decoder's category read-out little in a few steps: from the paper's
    start its softmax stays near uniform (dp-tldm on hmeq at epsilon 1 drew two numeric columns 100 %
    missing), from the released log-frequencies it draws near the marginals."""
    df, schema = skewed_table()
    model = {"name": "tldm", **QUICK, "vae_epochs": 1, "diffusion_epochs": 1, "prior_share": share, "decode": "sample"}
    s, notes, top, missing, _ = fit_from_the_start(df, schema, "mode_features", model)
    if share:
        # one release, charged before either stage: c's block, x's mode block, x's missing flag
        assert notes == [("tldm: one-way counts of 2 one-hot block(s) and 1 flag(s) for the output layer's "
                          "starting biases")]
        model = [c.note for c in s.ledger_.charges if c.module.startswith("tldm")]
        assert model[:2] == ["tldm: record count", notes[0]]
        assert top > 0.8 and abs(missing - 0.3) < 0.08, (top, missing)
    else:
        assert notes == [] and top < 0.6 and abs(missing - 0.3) > 0.1, (top, missing)
    assert s.privacy_spent().epsilon <= 20.0 * (1 + 1e-9)


def test_a_tldm_file_written_before_prior_share_loads_as_fitted_without_it(demo, tmp_path):
    df, schema = demo
    s = _fit(df, schema, 1.0, prior_share=0.0)
    back, _ = load_as_written_before(s, tmp_path, ["prior_share"])
    assert back.model.prior_share == 0.0 and back.sample(300, seed=2).equals(s.sample(300, seed=2))
