"""The transformer row generator: a GPT-2 whose every layer Opacus clips exactly, constrained and
KV-cached sampling, DP-SGD through the ledger, and nothing downloaded."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import synthzoo as sz
from helpers import fit_from_the_start, load_as_written_before, skewed_table
from synthzoo.core.tokens import BOS, TokenTable
from synthzoo.datasets import make_demo
from synthzoo.models.transformer import Transformer, _network, gpt2
from synthzoo.preprocess.tokens import Tokens

TINY = {"n_layer": 1, "n_embd": 16, "n_head": 2, "epochs": 2, "batch_size": 200}


def demo_table(n=200):
    df, schema = make_demo(n=n, seed=0)
    return df, schema, TokenTable(schema, Tokens().fit(df, list(schema.columns), None, np.random.default_rng(0)))


def test_gpt2_has_only_layers_opacus_clips_exactly_and_untied_embeddings():
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.pytorch_utils import Conv1D

    torch.manual_seed(0)
    model = gpt2(50, 8, 2, 16, 2, 0.0)
    kinds = {type(m) for m in model.modules() if any(True for _ in m.parameters(recurse=False))}
    assert kinds == {torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Embedding}
    assert not any(isinstance(m, Conv1D) for m in model.modules())
    assert model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr()
    # the swap changes nothing: same weights through Conv1D and through Linear give the same logits
    torch.manual_seed(1)
    ref = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=8, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0,
                                     embd_pdrop=0, attn_pdrop=0, tie_word_embeddings=False)).eval()
    x = torch.randint(0, 50, (3, 8))
    want = ref(input_ids=x).logits
    from synthzoo.models.transformer import swap_conv1d
    assert swap_conv1d(torch, ref) == 8
    torch.testing.assert_close(ref(input_ids=x).logits, want, rtol=1e-5, atol=1e-5)


def test_ghost_clipping_norms_equal_a_per_record_loop():
    """Opacus' ghost-clipping per-record gradient norms of the per-record loss (the row's mean token
    NLL) match the norms of each record's gradient computed alone, for every parameter together."""
    from opacus.grad_sample import GradSampleModuleFastGradientClipping

    df, schema, table = demo_table()
    torch.manual_seed(0)
    net = _network(torch, table, 2, 16, 2, 0.0, prior=True)
    net.prior.normal_()                    # a buffer: no gradient, no per-record norm of its own
    L, n = table.n_positions, 12
    tok = torch.as_tensor(table.transform(df.iloc[:n]))
    inp = torch.cat([torch.full((n, 1), BOS), tok[:, :-1]], dim=1)
    tgt = tok - torch.as_tensor(table.starts)[None, :]
    allowed = torch.as_tensor(table.masks(tok.numpy()))
    pos = torch.arange(L).expand(n, L).contiguous()
    params = list(net.parameters())
    loop = []
    for i in range(n):
        g = torch.autograd.grad(net(inp[i:i + 1], pos[i:i + 1], tgt[i:i + 1], allowed[i:i + 1]).sum(), params)
        loop.append(torch.sqrt(sum((x ** 2).sum() for x in g)))
    wrapped = GradSampleModuleFastGradientClipping(net, max_grad_norm=1.0, loss_reduction="sum",
                                                   use_ghost_clipping=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped(inp, pos, tgt, allowed).sum().backward()
    ghost = wrapped.get_norm_sample()
    torch.testing.assert_close(ghost, torch.stack(loop), rtol=1e-4, atol=1e-6)
    assert ghost.min() > 0


def test_kv_cached_sampling_matches_the_full_forward():
    """The sampling decoder (key/value buffers, the position's output rows only, fused GELU) gives,
    position by position, the logits of transformers' GPT-2 on the whole row (dropout configured but
    off in evaluation mode)."""
    from synthzoo.models.transformer import _Decoder

    df, schema, table = demo_table()
    torch.manual_seed(0)
    net = _network(torch, table, 2, 16, 2, 0.1, prior=True).eval()
    net.prior.normal_()                    # a private fit's start: a fixed vector added to every logit
    n = 7
    tok = torch.as_tensor(table.transform(df.iloc[:n]))
    inp = torch.cat([torch.full((n, 1), BOS), tok[:, :-1]], dim=1)
    L = table.n_positions
    with torch.no_grad():
        full = net.position_logits(net.logits(inp, torch.arange(L).expand(n, L)), torch.arange(L))
    dec = _Decoder(torch, net)
    cache = dec.cache(n, L)
    steps = torch.stack([dec.step(inp[:, p], p, cache) for p in range(L)], 1)
    torch.testing.assert_close(steps, full, rtol=1e-4, atol=1e-5)


def _fit(epsilon, df, schema, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sz.Synthesizer(preprocess=["tokens"], model={"name": "transformer", **TINY, **params},
                              epsilon=epsilon, schema=schema, seed=0).fit(df)


def test_every_sampled_row_is_valid_without_rejection():
    """Even an untrained model at a high temperature (its tokens nearly uniform over the allowed ones)
    samples only rows inside the schema: the constraint is in the sampler, not learned."""
    df, schema = make_demo(n=400, seed=0)
    s = _fit(None, df, schema, epochs=1, temperature=50.0)
    tokens = s.model.sample(3000, np.random.default_rng(0))
    assert tokens.shape == (3000, s.encoder_.n_positions)
    assert s.encoder_.check(tokens).all()
    fake = s.sample(3000, seed=0)
    assert len(fake) == 3000
    schema.validate(fake)
    for c in schema:                       # high temperature reaches the bounds of every number
        if c.is_numeric and c.kind == "numerical":
            v = fake[c.name].astype(float)
            assert v.min() >= c.lower and v.max() <= c.upper


def test_top_k_one_draws_the_most_likely_allowed_token_and_seed_reproduces():
    df, schema = make_demo(n=400, seed=0)
    s = _fit(None, df, schema)
    a = s.model.sample(50, np.random.default_rng(1))
    np.testing.assert_array_equal(a, s.model.sample(50, np.random.default_rng(1)))
    s.model.top_k = 1
    greedy = s.model.sample(20, np.random.default_rng(2))
    assert (greedy == greedy[0]).all()     # no randomness left: every row the same
    assert s.encoder_.check(greedy).all()


def test_private_fit_charges_dpsgd_and_saves_weights_as_json():
    df, schema = make_demo(n=400, seed=0)
    s = _fit(1.0, df, schema, dropout=0.0)
    spent = s.privacy_spent()
    assert 0.99 < spent.epsilon <= 1.0 + 1e-9
    mech = s.privacy_breakdown()["mechanisms"].iloc[0]
    assert "dp_sgd" in mech and "discrete_gaussian" in mech
    doc = json.loads(json.dumps(s.to_json()))
    assert doc["encoding"] == "tokens"
    weights = doc["model_state"]["weights"]
    assert all(set(w) == {"shape", "values"} for w in weights.values())
    again = sz.Synthesizer.from_json(doc)
    pd.testing.assert_frame_equal(s.sample(100, seed=4), again.sample(100, seed=4))
    bad = json.loads(json.dumps(doc))
    k = next(iter(bad["model_state"]["weights"]))
    bad["model_state"]["weights"][k]["values"][0] = "nan"
    with pytest.raises(sz.ConfigError):
        sz.Synthesizer.from_json(bad)


def test_nothing_is_downloaded(monkeypatch):
    """The network is built from a config: loading pretrained weights is never attempted."""
    import transformers

    def refuse(*a, **k):
        raise AssertionError("from_pretrained called")

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(refuse))
    monkeypatch.setattr(transformers.GPT2LMHeadModel, "from_pretrained", classmethod(refuse))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    df, schema = make_demo(n=200, seed=0)
    _fit(None, df, schema, epochs=1).sample(10)


def test_parameters_and_presets():
    with pytest.raises(sz.ConfigError, match="n_embd"):
        Transformer(n_embd=30, n_head=4)
    assert Transformer().architecture() == (2, 128, 4)
    assert Transformer(size="paper").architecture() == (6, 768, 12)
    assert Transformer(size="paper", n_layer=3).architecture() == (3, 768, 12)
    cfg = sz.presets.preset_config("realtabformer")
    assert cfg["select"] is None and cfg["preprocess"][0]["name"] == "tokens"
    assert sz.presets.preset_config("dp-transformer")["model"]["dropout"] == 0.0
    with pytest.raises(sz.ConfigError, match="tokens"):
        sz.Synthesizer(preprocess=["features"], model="transformer", epsilon=None)


@pytest.mark.parametrize("share", [0.05, 0.0])
def test_dp_transformer_starts_at_the_noisy_token_frequencies(share):
    """A few DP-SGD steps barely move GPT-2's near-uniform logits; with the released token counts added
    as a fixed prior the untrained network already draws each position near its marginal."""
    df, schema = skewed_table()
    model = {"name": "transformer", **TINY, "epochs": 1, "dropout": 0.0, "prior_share": share}
    s, notes, top, missing, _ = fit_from_the_start(df, schema, "tokens", model)
    if share:
        L = s.encoder_.n_positions
        assert notes == [f"transformer: token counts of {L} position(s) for the output layer's starting biases"]
        charges = [c.note for c in s.ledger_.charges if c.module.startswith("transformer")]
        assert charges[:2] == ["transformer: record count", notes[0]] and len(charges) == 3   # then DP-SGD
        assert top > 0.8 and abs(missing - 0.3) < 0.08, (top, missing)
    else:
        assert notes == [] and top < 0.6, top
        assert "prior" not in s.to_json()["model_state"]["weights"]
    assert s.privacy_spent().epsilon <= 20.0 * (1 + 1e-9)


def test_a_transformer_file_written_before_prior_share_loads_as_fitted_without_it(tmp_path):
    df, schema = make_demo(n=400, seed=0)
    s = _fit(1.0, df, schema, prior_share=0.0)
    back, _ = load_as_written_before(s, tmp_path, ["prior_share"])
    assert back.model.prior_share == 0.0 and back.sample(300, seed=2).equals(s.sample(300, seed=2))
