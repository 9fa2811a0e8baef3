"""Named recipes for published methods, built from the module registry.

Each preset is a plain configuration (module names and parameters), so it can be printed,
saved, and overridden piece by piece: ``sz.make("privsyn", model="gum", select={"name": "indif",
"select_share": 0.2})``.
"""

from __future__ import annotations

import copy
import inspect

from .core.base import REGISTRY
from .core.errors import ConfigError
from .pipeline import Synthesizer

#: The recipe every preset starts from: Chen et al.'s preprocessing (PrivTree binning of numeric
#: columns, DP rare-category merge) with a tenth of the budget, the rest to selection and measurement.
#: A preset below lists what it changes: its selector, its model (and a record model's split).
BASE = {"preprocess": ["privtree", "rare_merge"], "budget_split": {"preprocess": 0.1, "select": 0.9}}
#: The recipe of a model that fits continuous features: CTGAN's mode-specific normalisation (modes from
#: DP histograms over PrivTree bins) with a tenth of the budget, the rest to the model.
FEATURE_BASE = {"preprocess": [{"name": "mode_features", "n_modes": 10}], "select": None,
                "budget_split": {"preprocess": 0.1, "model": 0.9}}

_CTGAN_PAPER = "Xu et al., Modeling Tabular Data using Conditional GAN (CTGAN), NeurIPS 2019"
_TVAE_PAPER = "Xu et al., Modeling Tabular Data using Conditional GAN (TVAE), NeurIPS 2019"
_TABDDPM_PAPER = "Kotelnikov et al., TabDDPM: Modelling Tabular Data with Diffusion Models, ICML 2023"
_RTF_PAPER = ("Solatorio & Dupriez, REaLTabFormer: Generating Realistic Relational and Tabular Data using "
              "Transformers, 2023")
_TABSYN_PAPER = ("Zhang et al., Mixed-Type Tabular Data Synthesis with Score-based Diffusion in Latent Space (TabSyn), "
                 "ICLR 2024")

PRESETS: dict[str, dict] = {
    # Zhang et al., "PrivSyn: Differentially Private Data Synthesis" (USENIX Security 2021), with the
    # preprocessing of Chen et al.'s benchmark (PrivTree binning, DP rare-category merge).
    "privsyn": {
        "select": "indif",
        "model": "gum",
        "paper": "Zhang et al., PrivSyn: Differentially Private Data Synthesis, USENIX Security 2021",
    },
    # McKenna, Sheldon & Miklau, "Winning the NIST Contest" (2021): MST selection + private-pgm.
    "mst": {
        "select": "mst",
        "model": {"name": "pgm", "iters": 2500},
        "paper": "McKenna, Sheldon & Miklau, Winning the NIST Contest, JPC 2021 (MST)",
    },
    # McKenna, Mullins, Sheldon & Miklau, "AIM" (VLDB 2022): adaptive selection + private-pgm.
    # Paper/reference settings: all 2-way workload, T = 16 d, max_model_size 80 MB, at most 1000
    # mirror-descent iterations for every round's estimate and for the final one.  Round estimates
    # stop at a relative tolerance of 1e-3 and are refined to 1e-4 when AIM's annealing test is
    # close (PGM.refine_round): the same decisions, about half the iterations on large tables.
    # PrivTree bins of at least 3 % of the rows (the base recipe: 2 %): on adult at epsilon 1, 32
    # paired noise draws, 2-way TVD 0.0259 against 0.0266 with both changes (23 of 32 lower).
    "aim": {
        "preprocess": [{"name": "privtree", "theta_share": 0.03}, "rare_merge"],
        "select": {"name": "aim", "degree": 2, "rounds": None, "max_model_size": 80.0},
        "model": {"name": "pgm", "iters": 1000, "round_iters": 1000, "round_tol": 1e-3, "refine_tol": 1e-4},
        "paper": "McKenna et al., AIM: An Adaptive and Iterative Mechanism for DP Synthetic Data, VLDB 2022",
    },
    # Cai, Lei, Wei, Xiao, "Data Synthesis via Differentially Private Markov Random Fields" (PVLDB
    # 2021), the reference code's settings: 0.1 of the budget for the noisy attribute graph, 0.1
    # for the refinement criteria, 0.8 for the marginals; theta 6; 0.8 d refinement marginals.
    # The model-size cap is 80 MB (the reference allows 381 MB on a GPU).  PrivTree bins of at least
    # 3 % of the rows: on adult at epsilon 1, 32 paired noise draws, 2-way TVD 0.0307 against 0.0347
    # with the base recipe's 2 % (27 of 32 lower; the finer bins leave PrivMRF's few marginals noisier).
    "privmrf": {
        "preprocess": [{"name": "privtree", "theta_share": 0.03}, "rare_merge"],
        "select": {"name": "privmrf", "graph_share": 0.1, "criteria_share": 0.1, "theta": 6.0,
                   "refine_ratio": 0.8, "steps": None, "max_candidates": 400, "max_attrs": 6,
                   "max_model_size": 80.0},
        "model": {"name": "pgm", "iters": 1000},
        "paper": "Cai, Lei, Wei, Xiao, Data Synthesis via Differentially Private Markov Random Fields, PVLDB 2021",
    },
    # Vietri et al., "Private Synthetic Data for Multitask Learning and Marginal Queries" (RAP++,
    # NeurIPS 2022), settings of tab_bench's RAP++ configuration: d-1 select epochs, each round
    # split evenly between selection and measurement (top-1 per epoch as in its config), relaxed
    # projection onto a synthetic table of 1000 rows (RAP's N').
    "rap++": {
        "select": {"name": "rap++", "degree": 2, "rounds": "d-1", "q": 1, "select_share": 0.5},
        "model": {"name": "rp", "n_rows": 1000},
        "paper": "Vietri et al., Private Synthetic Data for Multitask Learning and Marginal Queries, NeurIPS 2022",
    },
    # Liu, Vietri, Wu, "Private-GSD: Generating Private Synthetic Data with Genetic Algorithms"
    # (ICML 2023): the same adaptive rounds as RAP++ with the genetic-algorithm synthesiser
    # (synthetic table of 2000 rows).
    "gsd": {
        "select": {"name": "rap++", "degree": 2, "rounds": "d-1", "q": 1, "select_share": 0.5},
        "model": {"name": "gsd", "n_rows": 2000},
        "paper": "Liu, Vietri, Wu, Generating Private Synthetic Data with Genetic Algorithms (Private-GSD), ICML 2023",
    },
    # Liu, Vietri, Steinke, Ullman, Wu, "Iterative Methods for Private Synthetic Data: Unifying
    # Framework and New Methods" (GEM, NeurIPS 2021), tab_bench's defaults: 2-way workload,
    # T = 5 d rounds of one exponential-mechanism pick each, alpha = 0.5 of every round for the
    # pick, a generator of two hidden layers trained 500 Adam steps (lr 1e-3) per round on a
    # batch of 1024 noise vectors, on the error of every measured cell (the paper's objective;
    # gn's threshold_factor=0.5 is the reference code's shortcut, which fitted adult worse: README).
    "gem": {
        "select": {"name": "rap++", "degree": 2, "rounds": "5d", "q": 1, "select_share": 0.5},
        "model": {"name": "gn", "hidden": [512, 512], "iters": 500, "lr": 1e-3, "batch": 1024},
        "paper": "Liu et al., Iterative Methods for Private Synthetic Data: Unifying Framework and New Methods "
                 "(GEM), NeurIPS 2021",
    },
    # Harder, Adamczewski, Park, "DP-MERF" (AISTATS 2021): from the reference code, 2000 random
    # Fourier features, Adam at lr 1e-2, a noise input of length 10; our choices (documented in
    # synthzoo/models/dpmerf.py): a Gaussian kernel over all one-hot blocks with length scale
    # 0.5 sqrt(d), 1000 steps with the rate decayed to 5 %, batches of 500 Gumbel-softmax records.
    "dpmerf": {
        "select": None,
        "model": {"name": "dpmerf", "n_features": 2000, "length_scale": 0.5, "hidden": [256, 256],
                  "iters": 1000, "lr": 1e-2, "lr_decay": 0.05, "batch": 500, "noise_dim": 10,
                  "count_share": 0.02, "output": "gumbel"},
        "budget_split": {"preprocess": 0.1, "model": 0.9},
        "paper": "Harder, Adamczewski, Park, DP-MERF: Differentially Private Mean Embeddings with Random Features "
                 "for Practical Privacy-preserving Data Generation, AISTATS 2021",
    },
    # Xu, Skoularidou, Cuesta-Infante, Veeramachaneni, "Modeling Tabular Data using Conditional GAN"
    # (NeurIPS 2019), the paper's settings: mode-specific normalisation (10 modes), noise 128,
    # generator and critic 256-256, Adam 2e-4 (betas 0.5, 0.9), batches of 500, 300 epochs, pac 10.
    # epsilon=None trains the paper's CTGAN; a number trains DP-CTGAN with the same settings.
    "ctgan": {
        "model": {"name": "ctgan", "epochs": 300, "batch_size": 500},
        "paper": _CTGAN_PAPER,
    },
    # DP-CTGAN (synthzoo/models/ctgan.py): settings for training under DP-SGD on a CPU -- larger
    # batches (a smaller sampling rate's noise is spread over more rows) and fewer epochs: 50, where 20
    # left adult's generator at the majority class (F1 .455 against .683 over three fits each, 2-way TVD
    # .091 against .082), and 100 gave a worse TVD (.101, one fit); hmeq and housing within noise (README).
    "dp-ctgan": {
        "model": {"name": "ctgan", "epochs": 50, "batch_size": 1000, "max_grad_norm": 1.0},
        "paper": _CTGAN_PAPER + "; DP-SGD on the critic",
    },
    # TVAE from the same paper: latent 128, 128-128 encoder and decoder, Adam 1e-3, weight decay
    # 1e-5, batches of 500, 300 epochs, loss factor 2.
    "tvae": {
        "model": {"name": "tvae", "epochs": 300, "batch_size": 500},
        "paper": _TVAE_PAPER,
    },
    # DP-TVAE: DP-SGD on encoder and decoder, batches of 1000, 30 epochs.
    "dp-tvae": {
        "model": {"name": "tvae", "epochs": 30, "batch_size": 1000, "max_grad_norm": 1.0},
        "paper": _TVAE_PAPER + "; DP-SGD on encoder and decoder",
    },
    # Kotelnikov et al., "TabDDPM" (ICML 2023), the reference's adult design scaled for a CPU
    # (synthzoo/models/tabddpm.py says how): quantile features (normal scores; the quantiles from a DP
    # histogram, or non-privately from the column as the paper), T = 100, label-conditional, AdamW
    # 2e-3 annealed to 0; hidden (256, 512, 512, 256) and 240 epochs of 1,024 rows (the reference:
    # 256-1024x4-256, 30,000 steps of 4,096).
    "tabddpm": {
        "preprocess": [{"name": "quantile_features"}],
        "model": {"name": "tabddpm"},
        "paper": _TABDDPM_PAPER,
    },
    # DP-TabDDPM: DP-SGD with augmentation multiplicity 4 on a smaller denoiser (256, 256), 30 epochs
    # of Poisson batches of 4,096 (about 190 steps on adult): large batches keep the noise per step
    # small, the 4 timesteps per record average the diffusion loss's own variance before clipping.
    "dp-tabddpm": {
        "preprocess": [{"name": "quantile_features"}],
        "model": {"name": "tabddpm", "epochs": 30, "batch_size": 4096, "multiplicity": 4, "hidden": [256, 256],
                  "max_grad_norm": 1.0},
        "paper": _TABDDPM_PAPER + "; DP-SGD with augmentation multiplicity on the denoiser",
    },
    # Truda, "Generating tabular datasets under differential privacy" (2023), TableDiffusion as SynMeter
    # runs it (its base configuration: T = 5 steps predicting the noise, residual widths 128-128, Adam
    # 0.005, Poisson batches of 512, 5 epochs); quantile features (uniform), the quantiles from a DP
    # histogram. epsilon=None trains the same network without DP.
    "tablediffusion": {
        "preprocess": [{"name": "quantile_features"}],
        "model": {"name": "tablediffusion", "steps": 5, "hidden": [128, 128], "epochs": 5, "batch_size": 512,
                  "lr": 0.005},
        "paper": "Truda, Generating tabular datasets under differential privacy, arXiv 2308.14784 (2023)",
    },
    # Jordon, Yoon, van der Schaar, "PATE-GAN" (ICLR 2019), with the data-independent bound and the
    # changes that make it learn of synthzoo/models/pategan.py: 1,000 linear teachers on random
    # Fourier features, soft student labels, a conditional generator; 300 rounds of 64 labels.
    "pate-gan": {
        "model": {"name": "pategan", "n_teachers": 1000, "iterations": 300, "batch_size": 64},
        "paper": "Jordon, Yoon, van der Schaar, PATE-GAN: Generating Synthetic Data with Differential Privacy "
                 "Guarantees, ICLR 2019",
    },
    # Solatorio & Dupriez, "REaLTabFormer" (2023): a GPT-2 trained from scratch on rows as column-wise
    # token sequences, numbers as digits. Its vocabulary comes from the schema here (`tokens`, base-100
    # digits: two decimal digits a token, half the positions of REaLTabFormer's); sized for a CPU
    # (synthzoo/models/transformer.py: 2 layers of width 128 against the paper's 6 of 768; `size="paper"`
    # builds that), 20 epochs at a fixed count (no DCR early stopping). epsilon=None trains it as
    # published; a number trains it by DP-SGD.
    "realtabformer": {
        "preprocess": [{"name": "tokens", "base": 100}],
        "select": None,
        "model": {"name": "transformer", "epochs": 20, "batch_size": 512, "lr": 1e-3, "dropout": 0.1},
        "budget_split": {"preprocess": 0.0, "model": 1.0},
        "paper": _RTF_PAPER,
    },
    # DP transformer: the same network and tokens under DP-SGD (dropout off: the clipped, noised
    # gradient regularises), larger batches and fewer epochs for DP-SGD on a CPU.
    "dp-transformer": {
        "preprocess": [{"name": "tokens", "base": 100}],
        "select": None,
        "model": {"name": "transformer", "epochs": 10, "batch_size": 1024, "lr": 2e-3, "dropout": 0.0,
                  "max_grad_norm": 1.0},
        "budget_split": {"preprocess": 0.0, "model": 1.0},
        "paper": _RTF_PAPER + "; DP-SGD on the whole network",
    },
    # Zhang et al., "TabSyn" (ICLR 2024): the column-tokenising VAE (d_token 4, 2 layers, 1 head, factor 32,
    # beta 1e-2 -> 1e-5 by 0.7) and EDM diffusion on its latents (Heun, 50 steps); scaled for a CPU
    # (synthzoo/models/tldm.py says how). epsilon=None trains TabSyn; a number trains both stages by DP-SGD.
    "tldm": {
        "model": {"name": "tldm"},
        "paper": _TABSYN_PAPER,
    },
    # DP-TLDM (Zhu et al.) with both stages charged: DP-SGD on the VAE and on the denoiser (the paper
    # trains the latter without privacy); settings for DP-SGD on a CPU (on adult, one thread: a VAE epoch
    # about 29 CPU s, a whole fit at 1 + 1 epochs 61 s, so 15 + 15 epochs are at most about 15 min).
    # Categories drawn from the decoder's softmax: after so few steps it is near the released marginals
    # (prior_share), and its argmax would give every record the mode.
    "dp-tldm": {
        "model": {"name": "tldm", "vae_epochs": 15, "vae_batch_size": 1024, "diffusion_epochs": 15,
                  "diffusion_batch_size": 1024, "noise_levels": 4, "decode": "sample"},
        "paper": _TABSYN_PAPER + "; Zhu et al., DP-TLDM, with the diffusion stage charged too",
    },
}


def preset_config(name: str) -> dict:
    """The full configuration of preset ``name``: :data:`BASE` (or :data:`FEATURE_BASE` for a model of
    continuous features) with the preset's changes."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; available: {sorted(PRESETS)}")
    preset = PRESETS[name]
    model = preset["model"] if isinstance(preset["model"], str) else preset["model"]["name"]
    base = FEATURE_BASE if REGISTRY["model"][model].get_tags()["input"] == "features" else BASE
    cfg = {**copy.deepcopy(base), **copy.deepcopy(preset)}
    cfg.pop("paper", None)
    return cfg


#: What :func:`make` passes on to :class:`Synthesizer` besides its own arguments.
_SYNTH_ARGS = tuple(inspect.signature(Synthesizer).parameters.keys() - {"epsilon", "delta", "schema", "seed", "name"})


def make(name: str, epsilon=1.0, delta=1e-5, schema=None, seed=0, **overrides) -> Synthesizer:
    """A :class:`Synthesizer` for the preset ``name``; keyword arguments override its modules/split.

    ``model=`` / ``select=`` given as a dict without a ``"name"`` changes parameters of the preset's
    own module (``make("ctgan", model={"epochs": 10})``); with a name, or as a name or an instance,
    it replaces the module."""
    cfg = preset_config(name)
    unknown = [k for k in overrides if k not in _SYNTH_ARGS]
    if unknown:
        model = cfg["model"] if isinstance(cfg["model"], str) else cfg["model"]["name"]
        raise ConfigError(f"make({name!r}): unknown argument(s) {unknown}; a module's parameter goes in its "
                          f"module, e.g. model={{{unknown[0]!r}: ...}} (changes the preset's {model!r} model) or "
                          "select={...}")
    for role in ("model", "select"):
        given = overrides.get(role)
        if isinstance(given, dict) and "name" not in given:
            own = cfg.get(role)
            if own is None:
                raise ConfigError(f"make({name!r}): the preset has no {role} whose parameters {sorted(given)} could "
                                  f"change; name one: {role}={{'name': ..., ...}}")
            overrides[role] = {**({"name": own} if isinstance(own, str) else own), **given}
    if "preprocess" in overrides and "budget_split" not in overrides:
        # the preset's split was made for its own preprocessors: preprocessors that spend nothing leave
        # nothing to give them (an ablation's uniform arm spent 0.94 of epsilon 1), so the default split
        cfg.pop("budget_split", None)
    cfg.update(overrides)
    return Synthesizer(epsilon=epsilon, delta=delta, schema=schema, seed=seed, name=name, **cfg)


def available_presets() -> dict[str, str]:
    """``{preset: paper}``."""
    return {k: v.get("paper", "") for k, v in PRESETS.items()}
