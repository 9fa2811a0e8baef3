"""An autoregressive transformer row generator in the manner of REaLTabFormer (Solatorio & Dupriez,
"REaLTabFormer: Generating Realistic Relational and Tabular Data using Transformers", 2023), and its
DP-SGD variant.

A row is a fixed-length token sequence, column by column (:mod:`synthzoo.core.tokens`: a token per
category, digit tokens for numbers, every position with its own slice of the vocabulary), read by a
GPT-2 (``transformers.GPT2LMHeadModel``) built from a ``GPT2Config`` and trained from scratch: no
weights are ever downloaded (``from_pretrained`` is never called).  The model predicts each token
from a begin-of-row token and the tokens before it; its logits at a position are read only over
that position's tokens, masked to those that keep the row inside the schema (the digit automaton of
:meth:`~synthzoo.core.tokens.TokenTable.allowed`), both in training (the likelihood is that of the
constrained sampler) and in sampling -- so every sampled row is valid, with no rejection loop.
Sampling is batched over rows and uses the key/value cache (one new token per step).

DP: the per-record loss is the row's mean token negative log-likelihood, so DP-SGD
(:class:`~synthzoo.core.privacy.dpsgd.DPSGD`) clips each record's gradient through Opacus' ghost
clipping.  For that every layer with parameters must be one whose per-sample gradient norm Opacus
computes exactly: GPT-2's ``Conv1D`` layers are swapped for equivalent ``nn.Linear`` layers (weights
transposed) after the model is built, leaving Linear, LayerNorm and Embedding only
(``tests/models/test_transformer.py`` compares the clipped norms with a per-record loop); the input
and output embeddings are untied (a shared matrix would get the sum of two layers' squared norms,
not the squared norm of the sum); the position ids are passed per row (batch-shaped) so the position
embedding sees each record's own gradient.  Dropout, when on, is randomness inside each
record's own loss, so clipping still bounds each record's influence; a private fit draws its masks from
the secret noise (a public seed would hand them out by a record's rank in its batch).  Private runs take a fixed
number of steps; REaLTabFormer's DCR-based early stopping, which reads held-out rows after each
round, is not implemented.

**The marginal start** (ours, not the paper's; private runs, ``prior_share`` > 0).  GPT-2 starts with
logits near 0, so an untrained network draws every allowed token about equally often, and the few
dozen DP-SGD steps a small table affords leave much of that.  ``prior_share`` of the budget (after the
record count) releases every position's token counts in one discrete Gaussian release
(:func:`token_priors`), and their log-frequencies are added to the logits as a fixed vector (a buffer,
saved with the weights): the untrained network draws each position from its noisy marginal, and
training learns what the tokens before it change.  Measured in the README's transformer section.

Sizes: the defaults are for a CPU (2 layers, width 128, 4 heads); ``size="paper"`` is
REaLTabFormer's GPT-2 (``GPT2Config(n_layer=6)``: 6 layers, width 768, 12 heads).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.base import Model, register
from ..core.errors import ConfigError
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from ..core.tokens import BOS, TokenData, TokenTable
from .torch_features import (OneNetwork, centred_log_frequencies, dpsgd_run, draw_categories, floored_parts,
                             record_count, resolve_device, torch_module)

_PAPER = ("Solatorio & Dupriez, REaLTabFormer: Generating Realistic Relational and Tabular Data using "
          "Transformers, arXiv:2302.02041, 2023; GPT-2: Radford et al., 2019")
#: Architectures by ``size``: (layers, width, heads).
SIZES = {"cpu": (2, 128, 4), "paper": (6, 768, 12)}


def transformers_module():
    try:
        import transformers
    except ImportError:  # pragma: no cover - transformers is a declared dependency
        raise ConfigError("the transformer model needs transformers: pip install transformers") from None
    return transformers


def linear_from_conv1d(torch, conv):
    """GPT-2's ``Conv1D`` (``y = x W + b``, ``W`` of shape (in, out)) as the equivalent ``nn.Linear``."""
    w = conv.weight
    lin = torch.nn.Linear(w.shape[0], w.shape[1], bias=conv.bias is not None)
    with torch.no_grad():
        lin.weight.copy_(w.t())
        if conv.bias is not None:
            lin.bias.copy_(conv.bias)
    return lin


def swap_conv1d(torch, module) -> int:
    """Replace every ``transformers`` ``Conv1D`` under ``module`` by an equal ``nn.Linear``; returns how many."""
    from transformers.pytorch_utils import Conv1D

    n = 0
    for name, child in list(module.named_children()):
        if isinstance(child, Conv1D):
            setattr(module, name, linear_from_conv1d(torch, child))
            n += 1
        else:
            n += swap_conv1d(torch, child)
    return n


def gpt2(vocab_size: int, n_positions: int, n_layer: int, n_embd: int, n_head: int, dropout: float):
    """A GPT-2 language model built from a config (random weights, nothing downloaded), with Linear
    layers for Conv1D and untied embeddings -- every parameterised layer one that Opacus clips exactly."""
    torch = torch_module()
    tf = transformers_module()
    cfg = tf.GPT2Config(vocab_size=int(vocab_size), n_positions=int(n_positions), n_embd=int(n_embd),
                        n_layer=int(n_layer), n_head=int(n_head), resid_pdrop=float(dropout),
                        embd_pdrop=float(dropout), attn_pdrop=float(dropout), tie_word_embeddings=False,
                        bos_token_id=BOS, eos_token_id=BOS)
    model = tf.GPT2LMHeadModel(cfg)
    swap_conv1d(torch, model)
    supported = (torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Embedding)
    for m in model.modules():
        if any(True for _ in m.parameters(recurse=False)) and not isinstance(m, supported):
            raise ConfigError(f"transformer: layer {type(m).__name__} has no exact per-sample gradient in Opacus")
    assert model.lm_head.weight is not model.transformer.wte.weight
    return model


def token_priors(data: TokenData, budget: Budget, share: float, who: str) -> np.ndarray | None:
    """Starting log-frequencies of every position's tokens (a vector over the vocabulary, 0 at
    :data:`BOS`) from one discrete Gaussian release of each position's token counts, ``share`` of what
    is left of ``budget``; ``None`` when ``share`` is 0 or the run is not private.  A record holds one
    token at each of the ``L`` positions, so it moves ``L`` counts by one: L2 sensitivity ``sqrt(L)``.
    Counts are floored as :func:`~.torch_features.output_priors` floors them."""
    if not budget.private or share <= 0.0:
        return None
    from ..core.privacy.mechanisms import discrete_gaussian

    table = data.table
    local = table.local(data.x)
    exact = [np.bincount(local[:, p], minlength=pos.width).astype(np.float64) for p, pos in enumerate(table.positions)]
    noisy, sigma = discrete_gaussian(budget, np.concatenate(exact), math.sqrt(table.n_positions),
                                     float(share) * budget.remaining,
                                     note=f"{who}: token counts of {table.n_positions} position(s) for the output "
                                          "layer's starting biases")
    prior = np.zeros(table.vocab_size, dtype=np.float64)
    for pos, c in zip(table.positions, floored_parts(noisy, sigma, [pos.width for pos in table.positions])):
        prior[pos.start:pos.start + pos.width] = centred_log_frequencies(c)
    return prior


def _network(torch, table: TokenTable, n_layer: int, n_embd: int, n_head: int, dropout: float, prior: bool = False):
    """The GPT-2 plus the gather that reads each position's logits over its own tokens; its forward is
    the per-record loss.  With ``prior`` a fixed vector over the vocabulary (a buffer, saved with the
    weights, not trained) is added to the logits: :func:`token_priors`' start."""
    L, W = table.n_positions, table.max_width
    idx = np.zeros((L, W), dtype=np.int64)
    for p, pos in enumerate(table.positions):
        idx[p, :pos.width] = np.arange(pos.start, pos.start + pos.width)

    class TokenLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = gpt2(table.vocab_size, L, n_layer, n_embd, n_head, dropout)
            self.register_buffer("idx", torch.as_tensor(idx), persistent=False)
            if prior:
                self.register_buffer("prior", torch.zeros(table.vocab_size))

        def position_logits(self, logits, positions):
            """(B, k, V) logits at ``positions`` (k of them) -> (B, k, W) over each position's tokens."""
            ix = self.idx[positions].unsqueeze(0).expand(logits.shape[0], -1, -1)
            return logits.gather(2, ix)

        def logits(self, inp, pos):
            """(B, L, V) next-token logits: GPT-2's, plus the prior when there is one."""
            logits = self.gpt(input_ids=inp, position_ids=pos).logits
            return logits + self.prior if prior else logits

        def forward(self, inp, pos, target, allowed):
            """Per-record mean negative log-likelihood of the target tokens (local ids), each position's
            softmax taken over its allowed tokens only."""
            logits = self.logits(inp, pos)
            g = self.position_logits(logits, torch.arange(L, device=inp.device)).masked_fill(~allowed, float("-inf"))
            logp = torch.log_softmax(g, dim=2)
            return -logp.gather(2, target.unsqueeze(2)).squeeze(2).mean(dim=1)

    return TokenLM()


@register("model", "transformer")
class Transformer(OneNetwork, Model):
    """REaLTabFormer-style GPT-2 row generator (Solatorio & Dupriez 2023), trained from scratch, with
    constrained decoding and a DP-SGD variant.

    Parameters
    ----------
    size : {"cpu", "paper"}, default "cpu"
        The architecture when ``n_layer``/``n_embd``/``n_head`` are not given: ``"cpu"`` 2 layers of
        width 128 with 4 heads; ``"paper"`` REaLTabFormer's GPT-2 (6 layers, width 768, 12 heads).
    n_layer, n_embd, n_head : int, optional
        Override the size's layers, width and heads.
    dropout : float, default 0.1
        GPT-2's dropout (residual, embedding and attention; REaLTabFormer's 0.1).
    epochs : int, default 20
        Passes over the (estimated) number of records; a private run takes
        ``ceil(epochs * n_hat / batch_size)`` DP-SGD steps.
    batch_size : int, default 512
        Batch size (the expected one under Poisson sampling).
    lr : float, default 1e-3
        AdamW's peak learning rate, reached after a linear warm-up over the first 5 % of the steps and
        decayed to 0 on a cosine (a public schedule of the fixed number of steps).
    weight_decay : float, default 0.0
    max_grad_norm : float, default 1.0
        DP-SGD's per-record clipping norm.
    count_share : float, default 0.02
        Share of the model's budget for the DP record count that sets the sampling rate.
    prior_share : float, default 0.05
        Private runs: share of what the count leaves for one release of every position's token counts,
        whose log-frequencies are added to the logits as a fixed prior (:func:`token_priors`; ours, not
        the paper's; 0: the paper's network alone).
    temperature : float, default 1.0
        Sampling temperature (below 1 sharpens each token's distribution).
    top_k : int, default 0
        Draw each token among the ``top_k`` most likely allowed ones (0: all allowed tokens).
    sample_batch : int, default 8192
        Rows generated at once (the key/value cache holds ``layers x 2 x sample_batch x L x width`` floats).
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
        A progress bar over the training steps (None: on a terminal).

    Examples
    --------
    >>> sz.make("realtabformer", epsilon=None, schema=schema).fit(df).sample(1000)   # doctest: +SKIP
    >>> sz.make("dp-transformer", epsilon=1.0, schema=schema).fit(df)                  # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "input": "tokens", "spends_budget": True}
    _parameter_constraints = {
        "size": [Options("cpu", "paper")],
        "n_layer": [None, Interval(Integral, 1, 48)], "n_embd": [None, Interval(Integral, 4, 4096)],
        "n_head": [None, Interval(Integral, 1, 64)], "dropout": [Interval(Real, 0, 1, closed="left")],
        "epochs": [Interval(Integral, 1, None)], "batch_size": [Interval(Integral, 1, MAX_BATCH)],
        "lr": [Interval(Real, 0, None, closed="neither")], "weight_decay": [Interval(Real, 0, None)],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "prior_share": [Interval(Real, 0, 1, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")], "top_k": [Interval(Integral, 0, None)],
        "sample_batch": [Interval(Integral, 1, MAX_BATCH)], "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()]}
    _test_params = {"n_layer": 1, "n_embd": 16, "n_head": 2, "epochs": 2, "batch_size": 200}
    _params_added = {"prior_share": 0.0}  # files written before it: GPT-2's logits alone

    def __init__(self, size: str = "cpu", n_layer: int | None = None, n_embd: int | None = None,
                 n_head: int | None = None, dropout: float = 0.1, epochs: int = 20, batch_size: int = 512,
                 lr: float = 1e-3, weight_decay: float = 0.0, max_grad_norm: float = 1.0,
                 count_share: float = 0.02, prior_share: float = 0.05, temperature: float = 1.0, top_k: int = 0,
                 sample_batch: int = 8192, device: str = "auto", progress: bool | None = None):
        self.size = size
        self.n_layer = n_layer
        self.n_embd = n_embd
        self.n_head = n_head
        self.dropout = dropout
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.prior_share = prior_share
        self.temperature = temperature
        self.top_k = top_k
        self.sample_batch = sample_batch
        self.device = device
        self.progress = progress

    def _check_related_params(self) -> None:
        layers, width, heads = self.architecture()
        if width % heads:
            self._bad("n_embd" if self.n_embd is not None else "n_head",
                      f"gives a width of {width}, which is not a multiple of {heads} heads")

    def architecture(self) -> tuple[int, int, int]:
        """(layers, width, heads): the size's, overridden by ``n_layer``/``n_embd``/``n_head``."""
        layers, width, heads = SIZES.get(self.size, SIZES["cpu"])
        return (layers if self.n_layer is None else int(self.n_layer),
                width if self.n_embd is None else int(self.n_embd),
                heads if self.n_head is None else int(self.n_head))

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"n_layer": ("int", 1, 4), "n_embd": ("cat", [64, 128, 256]), "epochs": ("int", 5, 50),
                "batch_size": ("cat", [256, 512, 1024]), "lr": ("log", 2e-4, 3e-3), "dropout": ("float", 0.0, 0.2)}

    # ------------------------------------------------------------------ fit
    def _build(self, table: TokenTable):
        layers, width, heads = self.architecture()
        return _network(torch_module(), table, layers, width, heads, float(self.dropout),
                        prior=float(self.prior_share) > 0)

    def fit_records(self, data: TokenData, budget: Budget, rng: np.random.Generator) -> "Transformer":
        """Train on the token rows, by DP-SGD charged to ``budget`` when private."""
        if not isinstance(data, TokenData):
            raise ConfigError(f"{self.name} fits token rows (TokenData, from the 'tokens' preprocessor), "
                              f"got {type(data).__name__}")
        torch = torch_module()
        dev = resolve_device(self.device, self.name)
        torch.manual_seed(int(rng.integers(2 ** 62)))   # the weights (and a non-private fit's dropout): the user's seed
        table = data.table
        net = self._build(table).to(dev)
        n_hat = record_count(self, data, budget, "transformer")
        prior = token_priors(data, budget, float(self.prior_share), "transformer")
        if prior is not None:
            net.prior.copy_(torch.as_tensor(prior, dtype=net.prior.dtype))
        n_hat, n_steps, sgd = dpsgd_run(self, data, budget, "transformer", n_hat=n_hat)
        wrapped = sgd.wrap(net)
        params = [p for p in net.parameters() if p.requires_grad]
        _, rng = sgd.private_draws(torch, None, rng)  # dropout masks (torch's global generator)
        opt = torch.optim.AdamW(params, lr=float(self.lr), weight_decay=float(self.weight_decay))
        warm = max(1, int(0.05 * n_steps))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda t: min(1.0, (t + 1) / warm) * 0.5 * (1.0 + math.cos(math.pi * min(t, n_steps) / n_steps)))
        L = table.n_positions
        tokens = torch.as_tensor(data.x, dtype=torch.long)
        inp_all = torch.cat([torch.full((data.n, 1), BOS, dtype=torch.long), tokens[:, :-1]], dim=1)
        target_all = tokens - torch.as_tensor(table.starts)[None, :]
        allowed_all = torch.as_tensor(table.masks(data.x))
        pos = torch.arange(L, device=dev)
        net.train()
        for idx in progress_bar(sgd.batches(data.n, rng), total=n_steps, desc="transformer", enabled=self.progress):
            loss = None
            if len(idx):
                i = torch.as_tensor(idx, dtype=torch.long)
                loss = wrapped(inp_all[i].to(dev), pos.expand(len(idx), L).contiguous(), target_all[i].to(dev),
                               allowed_all[i].to(dev))
            sgd.backward(wrapped, params, loss)
            opt.step()
            sched.step()
        if sgd.private:
            wrapped.disable_hooks()
        self._set_fitted(table, net, n_hat)
        return self

    # ------------------------------------------------------------------ sample
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` token rows, drawn position by position with the key/value cache, each token among those
        that keep the row in the schema (temperature and top-k applied within them)."""
        self._require_fit()
        n = self._check_n(n)
        torch = torch_module()
        table: TokenTable = self.domain_
        gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
        out = [self._generate(torch, table, min(int(self.sample_batch), n - lo), gen)
               for lo in range(0, n, int(self.sample_batch))]
        return np.concatenate(out) if out else np.zeros((0, table.n_positions), dtype=np.int64)

    def _generate(self, torch, table: TokenTable, m: int, gen) -> np.ndarray:
        if self._sampler is None:
            self._sampler = _Decoder(torch, self._net)
        dec = self._sampler
        L, W = table.n_positions, table.max_width
        starts = table.starts
        temp, k = float(self.temperature), int(self.top_k)
        out = np.zeros((m, L), dtype=np.int64)
        state = table.start_state(m)
        tokens = torch.full((m,), BOS, dtype=torch.long)
        with torch.inference_mode():
            cache = dec.cache(m, L)
            for p in range(L):
                g = dec.step(tokens, p, cache)
                if temp != 1.0:
                    g = g / temp
                g = g.masked_fill_(~torch.as_tensor(table.allowed(p, state)), float("-inf"))
                if 0 < k < W:
                    kth = torch.topk(g, k, dim=1).values[:, -1:]
                    g = g.masked_fill_(g < kth, float("-inf"))
                choice = draw_categories(g, torch.rand(m, 1, generator=gen))[:, 0].numpy()
                state = table.advance(p, state, choice)
                out[:, p] = choice + starts[p]
                tokens = torch.as_tensor(out[:, p])
        return out

    def _sample_work(self) -> tuple[float, str]:
        """One step of every layer per position of a record (GPT-2's block: 12 width^2 multiply-adds, and the
        attention over the positions before it from the key/value cache), and the output layer's rows of the
        position's own tokens.  Unfitted: a row of one position (a lower bound)."""
        table = getattr(self, "domain_", None)
        positions = int(table.n_positions) if table is not None else 1
        widths = sum(p.width for p in table.positions) if table is not None else 1
        layers, w, _ = self.architecture()
        per_position = 12 * layers * w * w
        work = positions * per_position + layers * w * positions * (positions + 1) + w * widths
        plural = "s" if positions != 1 else ""
        return work, (f"{positions} position{plural} x a network of {per_position:.2g} weights "
                      f"(n_layer={layers}, n_embd={w})")


class _Decoder:
    """The fitted GPT-2's forward pass for sampling, one position at a time for a batch of rows: the
    same layers on the same weights as ``transformers``' GPT-2 with its key/value cache (the tests
    compare the logits), written out so that a step does only what sampling needs -- keys and values
    written into buffers allocated once (the library's cache concatenates them at every step), the
    output layer's rows of the position's own tokens only (about 100 of the vocabulary's 1,305 on
    adult), GELU's tanh form as one fused kernel (the same function as GPT-2's ``gelu_new``), no
    autograd and no dropout (evaluation mode)."""

    def __init__(self, torch, net):
        gpt = net.gpt
        cfg = gpt.config
        if not cfg.scale_attn_weights or cfg.scale_attn_by_inverse_layer_idx or cfg.reorder_and_upcast_attn:
            raise ConfigError("transformer: the fitted GPT-2's attention options are not the ones sampling supports")
        self.torch, tr = torch, gpt.transformer
        self.heads = cfg.n_head
        self.width = cfg.n_embd
        self.head_dim = self.width // self.heads
        d = lambda t: t.detach().float().cpu()  # noqa: E731
        self.wte, self.wpe = d(tr.wte.weight), d(tr.wpe.weight)
        self.eps = cfg.layer_norm_epsilon
        self.fused_gelu = cfg.activation_function in ("gelu_new", "gelu_pytorch_tanh")
        self.layers = []
        for blk in tr.h:
            a, mlp = blk.attn, blk.mlp
            self.layers.append({
                "ln1": (d(blk.ln_1.weight), d(blk.ln_1.bias)), "ln2": (d(blk.ln_2.weight), d(blk.ln_2.bias)),
                "qkv": (d(a.c_attn.weight).T.contiguous(), d(a.c_attn.bias)),
                "proj": (d(a.c_proj.weight).T.contiguous(), d(a.c_proj.bias)),
                "fc": (d(mlp.c_fc.weight).T.contiguous(), d(mlp.c_fc.bias)),
                "out": (d(mlp.c_proj.weight).T.contiguous(), d(mlp.c_proj.bias)), "act": mlp.act})
        self.ln_f = (d(tr.ln_f.weight), d(tr.ln_f.bias))
        head = d(gpt.lm_head.weight)
        idx = net.idx.cpu()
        self.head = [head[idx[p]].T.contiguous() for p in range(idx.shape[0])]   # (width, W) per position
        prior = d(net.prior) if hasattr(net, "prior") else torch.zeros(head.shape[0])
        self.prior = [prior[idx[p]].contiguous() for p in range(idx.shape[0])]
        if gpt.lm_head.bias is not None:
            raise ConfigError("transformer: an output layer with a bias is not GPT-2's")

    def cache(self, m: int, L: int) -> list:
        """Key and value buffers of ``m`` rows of ``L`` positions, one pair per layer."""
        shape = (m, self.heads, L, self.head_dim)
        return [(self.torch.empty(shape), self.torch.empty(shape)) for _ in self.layers]

    def step(self, tokens, p: int, cache):
        """Logits (m, W) over position ``p``'s tokens, given the token fed at ``p`` (the previous
        position's draw; BOS at 0) and the buffers holding positions ``0 .. p - 1``."""
        torch, F = self.torch, self.torch.nn.functional
        m, w = tokens.shape[0], self.width
        x = self.wte.index_select(0, tokens) + self.wpe[p]
        for layer, (keys, values) in zip(self.layers, cache):
            h = F.layer_norm(x, (w,), *layer["ln1"], self.eps)
            q, k, v = torch.addmm(layer["qkv"][1], h, layer["qkv"][0]).split(w, dim=1)
            keys[:, :, p] = k.view(m, self.heads, self.head_dim)
            values[:, :, p] = v.view(m, self.heads, self.head_dim)
            att = F.scaled_dot_product_attention(q.view(m, self.heads, 1, self.head_dim), keys[:, :, :p + 1],
                                                 values[:, :, :p + 1], scale=self.head_dim ** -0.5)
            x = x + torch.addmm(layer["proj"][1], att.view(m, w), layer["proj"][0])
            h = torch.addmm(layer["fc"][1], F.layer_norm(x, (w,), *layer["ln2"], self.eps), layer["fc"][0])
            h = F.gelu(h, approximate="tanh") if self.fused_gelu else layer["act"](h)
            x = x + torch.addmm(layer["out"][1], h, layer["out"][0])
        return torch.addmm(self.prior[p], F.layer_norm(x, (w,), *self.ln_f, self.eps), self.head[p])
