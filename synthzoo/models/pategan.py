"""PATE-GAN: Jordon, Yoon, van der Schaar, "PATE-GAN: Generating Synthetic Data with Differential
Privacy Guarantees" (ICLR 2019).

``n_teachers`` teacher discriminators each learn, on their own disjoint part of the records, to
tell real rows from the generator's; a student discriminator never sees a record: it learns from
generated rows labelled by the teachers' *noisy* vote; the generator learns to fool the student.

Privacy, with a data-independent bound and the ledger's accountant only:

* the parts are drawn record by record from the ledger's secret noise (each record independently
  to a uniformly chosen teacher), so adding or removing a record changes one teacher's part only;
* a record can therefore change one teacher's vote on a generated row: the vote histogram
  (fake, real) moves by at most 1 in two cells, L2 sensitivity sqrt(2).  Every label is released
  by the discrete Gaussian mechanism on that histogram (Canonne et al. 2020) and its argmax taken
  (post-processing), so each label costs ``1 / sigma^2`` zCDP whatever the data, and the
  ``Q = iterations x student_steps x batch_size`` labels of a run cost ``Q / sigma^2``: ``sigma`` is
  set from the model's budget and the whole run charged before training;
* teachers, student and generator may train on anything else freely: only the noisy votes reach
  the student, and through it the generator.

What Ganev et al. ("The Inadequacy of Similarity-based Privacy Metrics", 2024; their audit of six
PATE-GAN implementations) found wrong elsewhere, and how it stands here: no moments accountant is
hand-written (``dp_accounting`` composes the zCDP events); every teacher trains on its own part (not
the first part for all); bounds and encodings come from the public schema (``features``) or DP
histograms (``mode_features``), never from the data; no noise scale makes training stop early --
a run always takes all its steps (tests/models/test_pategan.py checks each).
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np

from ..core.base import Model, register
from ..core.errors import ConfigError
from ..core.features import FeatureData, FeatureTable
from ..core.params import Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.ledger import Budget
from ..core.privacy.mechanisms import noisy_count
from ..core.progress import progress_bar
from .torch_features import Head, build_for_saved, load_json_state, resolve_device, sample_rows, state_dict_to_json, torch_module

_PAPER = ("Jordon, Yoon, van der Schaar, PATE-GAN: Generating Synthetic Data with Differential Privacy "
          "Guarantees (ICLR 2019)")


def _mlp(torch, sizes: list[int], out: int):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(sizes[-1], out))


@register("model", "pategan")
class PATEGAN(Model):
    """PATE-GAN (Jordon, Yoon, van der Schaar, ICLR 2019) with a data-independent privacy bound.

    Parameters
    ----------
    n_teachers : int, default 50
        Teacher discriminators (disjoint parts of the records).
    iterations : int, default 300
        Rounds of (teacher steps, student steps, one generator step).
    teacher_steps, student_steps : int, default 5, 5
        Steps per round of each teacher and of the student.
    batch_size : int, default 64
        Rows per step (generated rows labelled per student step).
    noise_dim : int, default 64
    hidden : tuple of int, default (128, 128)
        Hidden widths of the generator and the discriminators.
    lr : float, default 1e-4
    count_share : float, default 0.02
        Share of the budget for a DP record count (the default sample size).
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None

    Examples
    --------
    >>> sz.make("pate-gan", epsilon=1.0, schema=schema).fit(df)             # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "n_teachers": [Interval(Integral, 1, None)], "iterations": [Interval(Integral, 1, None)],
        "teacher_steps": [Interval(Integral, 1, None)], "student_steps": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 1, None)], "noise_dim": [Interval(Integral, 1, None)],
        "hidden": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "lr": [Interval(Real, 0, None, closed="neither")], "count_share": [Interval(Real, 0, 1, closed="neither")],
        "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()]}
    _test_params = {"n_teachers": 3, "iterations": 4, "teacher_steps": 1, "student_steps": 1, "batch_size": 16,
                    "noise_dim": 8, "hidden": (16,)}

    def __init__(self, n_teachers: int = 50, iterations: int = 300, teacher_steps: int = 5, student_steps: int = 5,
                 batch_size: int = 64, noise_dim: int = 64, hidden=(128, 128), lr: float = 1e-4,
                 count_share: float = 0.02, device: str = "auto", progress: bool | None = None):
        self.n_teachers = n_teachers
        self.iterations = iterations
        self.teacher_steps = teacher_steps
        self.student_steps = student_steps
        self.batch_size = batch_size
        self.noise_dim = noise_dim
        self.hidden = hidden
        self.lr = lr
        self.count_share = count_share
        self.device = device
        self.progress = progress

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter (Du & Li 2024), PATE-GAN: teachers 10-100, batch 64-256
        return {"n_teachers": ("int", 10, 100), "iterations": ("int", 100, 1000), "batch_size": ("cat", [64, 128, 256])}

    @property
    def queries(self) -> int:
        """Labels the student receives in a run: what the privacy cost counts."""
        return int(self.iterations) * int(self.student_steps) * int(self.batch_size)

    def _generator(self, table: FeatureTable):
        torch = torch_module()
        return _mlp(torch, [int(self.noise_dim), *self.hidden], table.dim)

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "PATEGAN":
        """Train teachers, student and generator; the noisy votes are charged to ``budget`` first."""
        if not isinstance(data, FeatureData):
            raise ConfigError(f"pategan fits continuous features (FeatureData), got {type(data).__name__}")
        torch = torch_module()
        dev = resolve_device(self.device, "pategan")
        torch.manual_seed(int(rng.integers(2 ** 62)))
        gen_t = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
        table, k, B = data.table, int(self.n_teachers), int(self.batch_size)
        # every label is a discrete Gaussian vote histogram of L2 sensitivity sqrt(2): 1/sigma^2 zCDP each
        if budget.private:
            n_hat = noisy_count(budget, data.n, float(self.count_share) * budget.remaining,
                                note="pategan: record count")
            rho = budget.remaining * (1 - 1e-9)
            self.sigma_ = math.sqrt(self.queries / rho)
            budget.charge("pate_votes", dpa.ZCDpEvent(rho), rho,
                          note=f"pategan: {self.queries} noisy votes of {k} teachers, sigma={self.sigma_:.4g}")
            part = budget.noise.integers(k, data.n)  # secret, record by record
        else:
            n_hat = float(data.n)
            self.sigma_ = 0.0
            budget.charge("pate_votes", None, math.inf, note="pategan: exact votes (non-private)")
            part = rng.integers(k, size=data.n)
        self.parts_ = [np.flatnonzero(part == j) for j in range(k)]
        head = Head(table, dev)
        G = self._generator(table).to(dev)
        teachers = [_mlp(torch, [table.dim, *self.hidden], 1).to(dev) for _ in range(k)]
        student = _mlp(torch, [table.dim, *self.hidden], 1).to(dev)
        opt_g = torch.optim.Adam(G.parameters(), lr=float(self.lr))
        opt_t = [torch.optim.Adam(t.parameters(), lr=float(self.lr)) for t in teachers]
        opt_s = torch.optim.Adam(student.parameters(), lr=float(self.lr))
        bce = torch.nn.functional.binary_cross_entropy_with_logits
        x_all = torch.as_tensor(data.x, device=dev)
        ones, zeros = torch.ones(B, device=dev), torch.zeros(B, device=dev)

        def fake(m):
            return head.activate(G(torch.randn(m, int(self.noise_dim), generator=gen_t).to(dev)), tau=0.2,
                                 generator=gen_t)

        self.steps_run_ = 0
        for _ in progress_bar(range(int(self.iterations)), desc="pategan", enabled=self.progress):
            for j, (t, opt) in enumerate(zip(teachers, opt_t)):  # each teacher on its own part only
                rows = self.parts_[j]
                if rows.size == 0:
                    continue
                for _ in range(int(self.teacher_steps)):
                    real = x_all[torch.as_tensor(rows[rng.integers(rows.size, size=B)], device=dev)]
                    with torch.no_grad():
                        f = fake(B)
                    loss = bce(t(real).squeeze(1), ones) + bce(t(f).squeeze(1), zeros)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
            for _ in range(int(self.student_steps)):
                with torch.no_grad():
                    f = fake(B)
                    votes_real = torch.stack([(t(f).squeeze(1) > 0).to(torch.int64) for t in teachers]).sum(0)
                labels = self._noisy_labels(votes_real.cpu().numpy(), k, budget)
                loss = bce(student(f).squeeze(1), torch.as_tensor(labels, device=dev))
                opt_s.zero_grad(set_to_none=True)
                loss.backward()
                opt_s.step()
            loss_g = bce(student(fake(B)).squeeze(1), ones)
            opt_g.zero_grad(set_to_none=True)
            loss_g.backward()
            opt_g.step()
            self.steps_run_ += 1
        self._set_fitted(table, G, n_hat)
        return self

    def _noisy_labels(self, votes_real: np.ndarray, k: int, budget: Budget) -> np.ndarray:
        """Argmax of the (fake, real) vote histogram plus discrete Gaussian noise (charged up front)."""
        votes = np.stack([k - votes_real, votes_real], axis=1).astype(float)
        if budget.private:
            votes = votes + budget.noise.discrete_gaussian(self.sigma_, votes.shape)
        return (votes[:, 1] > votes[:, 0]).astype(np.float32)

    def _set_fitted(self, table: FeatureTable, G, total: float) -> None:
        self._fitted(table)
        self._gen = G.cpu().eval()
        self.total_ = total

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows from the generator (categories and flags drawn from its outputs)."""
        self._require_fit()
        torch = torch_module()
        return sample_rows(self.domain_, self._check_n(n), rng,
                           lambda m, gen: self._gen(torch.randn(m, int(self.noise_dim), generator=gen)))

    def _get_state(self) -> dict:
        return {"total": self.total_, "weights": state_dict_to_json(self._gen)}

    def _set_state(self, state: dict, table) -> None:
        G = build_for_saved(lambda: self._generator(table), state["weights"], "pategan")
        load_json_state(G, state["weights"], "pategan")
        self._set_fitted(table, G, float(state["total"]))
