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
  by the discrete Gaussian mechanism on that histogram (Canonne et al. 2020), so each label costs
  ``1 / sigma^2`` zCDP whatever the data, and the ``Q = iterations x batch_size`` labels of a run
  cost ``Q / sigma^2``: ``sigma`` is set from the model's budget and the whole run charged before
  training;
* the generator's conditional vectors come from the one-way marginals of the categorical columns
  (and of the mode indicators of mode-normalised numbers), released by the discrete Gaussian
  mechanism and charged with the record count before training
  (:class:`~synthzoo.models.torch_features.Conditions`, shared with DP-CTGAN), and each flag's (a
  column's missing values) count by the discrete Gaussian mechanism, all within ``count_share``; the
  within-mode law the generator is held to is the encoding's own model (nothing released:
  :class:`~synthzoo.models.torch_features.ModeMoments` says why);
* teachers, student and generator may train on anything else freely: only the noisy votes and the
  noisy statistics reach the student and the generator, and everything they do with them is
  post-processing (the student's soft labels and its fit, the generator's losses).

Why it learns (the paper's design, as measured on adult, does not: the teachers separate the
generator's rows within a few rounds, every vote says "fake", and the student -- which sees only
generated rows -- has nothing to pass on; one run on adult gave 2-way TVD .83 even without DP):

* **linear teachers refitted every round** (Jinsung Yoon's reference code refits scikit-learn's
  ``LogisticRegression`` teachers too), here in closed form on random Fourier features
  (:class:`_Teachers`): a linear boundary between two overlapping clouds runs through them, so
  the votes stay mixed instead of saturating at "fake", and the share voting "real" follows a
  kernel two-sample witness between the records and the generator;
* **a linear student** (:class:`_Student`): a ridge regression of the noisy vote shares on the
  same features, over the labelled rows of the last ``buffer_rounds`` rounds;
* **many small parts**.  With a data-independent bound the whole run releases ``Q`` numbers of
  noise ``sigma = sqrt(Q / rho)``; the student learns ``E[vote share | row]``, whose noise after
  ``Q`` labels scales as ``1 / (n_teachers sqrt(rho))`` whatever ``Q`` is, so the only lever is the
  number of teachers (hundreds, not the paper's handful);
* **soft labels**: the student regresses on the normalised noisy vote ``1/2 + (real - fake) /
  (2 n_teachers)`` -- an unbiased estimate of the share of teachers voting "real" -- instead of its
  argmax, which at this noise level is nearly a coin flip and throws the signal away;
* **a conditional generator** (CTGAN's, Xu et al. 2019): every generated row is conditioned on one
  block's category, drawn in proportion to its noisy frequency, with the generator's
  cross-entropy on that block; the batches the teachers and the student see therefore cover every
  category, which is what keeps the generator from collapsing onto one mode (the student can only
  rank rows it sees); besides the student's score the generator is pulled towards the released
  one-way marginals and flag rates and the encoding's within-mode law (``marginal_weight``;
  :class:`~synthzoo.models.torch_features.MarginalPull`, shared with DP-CTGAN), a warm start of
  ``warmup_steps`` on those alone;
* generated rows are exact categorical draws (hard Gumbel-softmax, straight-through for the
  generator's gradient), so teachers compare one-hot rows with one-hot rows.

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
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from ..core.statecheck import NUMBER, TENSOR
from .torch_features import (SAMPLE_PRECISIONS, Conditions, Head, OnePassGenerator, build_for_saved, load_json_state,
                             release_marginal_targets, resolve_device, state_dict_to_json, torch_module)

_PAPER = ("Jordon, Yoon, van der Schaar, PATE-GAN: Generating Synthetic Data with Differential Privacy "
          "Guarantees (ICLR 2019)")


def _mlp(torch, sizes: list[int], out: int):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(sizes[-1], out))


class _Teachers:
    """``k`` linear teachers on random Fourier features, refitted in closed form every round.

    Teacher ``j`` is the heavily regularised limit of an L2-regularised logistic regression of its
    part (label 1) against the round's generated rows (label 0): the weight is the difference of the
    two classes' mean features and the boundary sits at their midpoint, so its vote on ``x`` says
    whether ``phi(x)`` is nearer the part's mean than the generated rows' mean (squared norms
    estimated without bias).  The features ``phi(x) = sqrt(2/D) cos(x Omega + beta)`` (Rahimi &
    Recht) approximate a Gaussian kernel, so the share of teachers voting "real" follows the
    kernel two-sample witness between the records and the generator -- it cannot saturate the way
    trained networks do, and sees interactions between columns."""

    def __init__(self, torch, parts: list[np.ndarray], x_all, omega, beta):
        self.torch, self.k, self.omega, self.beta = torch, len(parts), omega, beta
        phi = torch.cat([self.features(x_all[lo:lo + 8192]) for lo in range(0, x_all.shape[0], 8192)])
        owner = torch.full((x_all.shape[0],), -1, dtype=torch.long, device=x_all.device)
        for j, p in enumerate(parts):
            owner[torch.as_tensor(p, dtype=torch.long, device=x_all.device)] = j
        size = torch.zeros(self.k, device=x_all.device).index_add_(0, owner, torch.ones_like(owner, dtype=phi.dtype))
        total = torch.zeros(self.k, phi.shape[1], device=x_all.device).index_add_(0, owner, phi)
        sq = torch.zeros(self.k, device=x_all.device).index_add_(0, owner, (phi ** 2).sum(1))
        self.empty = size == 0
        self.mean = total / size.clamp(min=1.0)[:, None]
        # unbiased |E phi|^2 of each part (its own mean's square where the part has one record)
        self.norm2 = torch.where(size > 1, ((total ** 2).sum(1) - sq) / (size * (size - 1)).clamp(min=1.0),
                                 (self.mean ** 2).sum(1))

    def features(self, x):
        return math.sqrt(2.0 / self.omega.shape[1]) * self.torch.cos(x @ self.omega + self.beta)

    def refit(self, fake) -> None:
        """Every teacher against the generated rows ``fake``."""
        phi = self.features(fake)
        m = phi.shape[0]
        total = phi.sum(0)
        fake_norm2 = ((total ** 2).sum() - (phi ** 2).sum()) / max(m * (m - 1), 1)
        self.w = self.mean - total / m
        self.b = -(self.norm2 - fake_norm2) / 2

    def votes(self, x):
        """How many teachers call each row of ``x`` real (a teacher with an empty part says fake)."""
        real = ((self.features(x) @ self.w.T + self.b) > 0) & ~self.empty
        return real.sum(1)


class _Student:
    """The student: a ridge regression of the noisy vote shares on the teachers' features, refitted
    in closed form on the labelled rows of the last rounds; its score on a generated row (linear in
    the features, like the teachers' witness) is what the generator climbs."""

    def __init__(self, features, ridge: float):
        self.features, self.ridge, self.w = features, ridge, None

    def fit(self, x, y) -> None:
        torch = torch_module()
        with torch.no_grad():
            phi = self.features(x)
            mu = phi.mean(0)
            pc = phi - mu
            d = phi.shape[1]
            a = pc.T @ pc + self.ridge * (pc ** 2).sum() / d * torch.eye(d, device=phi.device)
            self.w = torch.linalg.solve(a, pc.T @ (y - y.mean()))

    def __call__(self, x):
        out = self.features(x) @ self.w if self.w is not None else x.new_zeros(x.shape[0])
        return out[:, None]


@register("model", "pategan")
class PATEGAN(OnePassGenerator, Model):
    """PATE-GAN (Jordon, Yoon, van der Schaar, ICLR 2019) with a data-independent privacy bound,
    linear teachers refitted every round, soft student labels and a conditional generator (see the
    module docstring for the design and why it is sound).

    Parameters
    ----------
    n_teachers : int, default 1000
        Teachers, each on its own disjoint part of the records.
    iterations : int, default 300
        Rounds of (teacher refit, one batch of noisy labels, student steps, generator steps).
    batch_size : int, default 64
        Generated rows labelled by the teachers' noisy vote per round; the run releases
        ``iterations * batch_size`` labels.
    n_features : int, default 1000
        Random Fourier features the teachers see.
    length_scale : float, default 0.5
        The features' Gaussian kernel width, in units of the square root of the number of columns.
    teacher_fakes : int, default 2048
        Generated rows the teachers are refitted against each round.
    student_steps, generator_steps : int, default 5, 1
        Student (``student="mlp"`` only) and generator steps per round (post-processing).
    generator_batch : int, default 512
        Generated rows per generator step.
    student : {"ridge", "mlp"}, default "ridge"
        The student: ridge regression on the teachers' features (closed form), or an MLP.
    ridge : float, default 1.0
        The ridge student's penalty, relative to the features' mean variance.
    buffer_rounds : int, default 20
        Rounds of labelled rows the student is fitted on.
    warmup_steps : int, default 200
        Generator steps on the conditional and marginal losses alone before the first round.
    labels : {"soft", "hard"}, default "soft"
        The student's target: the normalised noisy vote share (unbiased) or its argmax (the paper).
    marginal_weight : float, default 1.0
        Weight of the generator's loss towards the released one-way marginals (0: none).
    condition_numbers : bool, default True
        Also condition the generator on the mode indicators of mode-normalised numbers (their
        one-way marginals released with the categorical ones).
    noise_dim : int, default 64
    hidden : tuple of int, default (128, 128)
        Hidden widths of the generator and the student.
    lr : float, default 1e-3
        Adam rate of the generator and the student.
    count_share : float, default 0.05
        Share of the budget for the DP record count and the one-way marginals.
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
    sample_precision : {"float32", "bfloat16"}, default "float32"
        Precision of the network's passes in :meth:`sample` (training is float32 either way): bf16 is
        faster where the CPU has bf16 instructions, slower where not (:class:`~.torch_features.SamplingNet`).

    Examples
    --------
    >>> sz.make("pate-gan", epsilon=1.0, schema=schema).fit(df)             # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "n_teachers": [Interval(Integral, 1, None)], "iterations": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 1, MAX_BATCH)], "n_features": [Interval(Integral, 1, None)],
        "length_scale": [Interval(Real, 0, None, closed="neither")],
        "teacher_fakes": [Interval(Integral, 2, None)],
        "student_steps": [Interval(Integral, 1, None)], "generator_steps": [Interval(Integral, 1, None)],
        "warmup_steps": [Interval(Integral, 0, None)], "generator_batch": [Interval(Integral, 2, MAX_BATCH)],
        "labels": [Options("soft", "hard")], "student": [Options("ridge", "mlp")], "ridge": [Interval(Real, 0, None)],
        "buffer_rounds": [Interval(Integral, 1, None)],
        "marginal_weight": [Interval(Real, 0, None)], "condition_numbers": [Boolean()],
        "noise_dim": [Interval(Integral, 1, None)], "hidden": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "lr": [Interval(Real, 0, None, closed="neither")], "count_share": [Interval(Real, 0, 1, closed="neither")],
        "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()], "sample_precision": [Options(*SAMPLE_PRECISIONS)]}
    _test_params = {"n_teachers": 3, "iterations": 4, "student_steps": 1, "generator_steps": 1, "batch_size": 16,
                    "n_features": 32, "teacher_fakes": 32, "warmup_steps": 2, "noise_dim": 8, "hidden": (16,)}

    def __init__(self, n_teachers: int = 1000, iterations: int = 300, batch_size: int = 64, n_features: int = 1000,
                 length_scale: float = 0.5, teacher_fakes: int = 2048, student_steps: int = 5,
                 generator_steps: int = 1, warmup_steps: int = 200, generator_batch: int = 512, labels: str = "soft",
                 student: str = "ridge", ridge: float = 1.0, buffer_rounds: int = 20,
                 marginal_weight: float = 1.0, condition_numbers: bool = True, noise_dim: int = 64,
                 hidden=(128, 128), lr: float = 1e-3, count_share: float = 0.05, device: str = "auto",
                 progress: bool | None = None, sample_precision: str = "float32"):
        self.n_teachers = n_teachers
        self.iterations = iterations
        self.batch_size = batch_size
        self.n_features = n_features
        self.length_scale = length_scale
        self.teacher_fakes = teacher_fakes
        self.student_steps = student_steps
        self.generator_steps = generator_steps
        self.warmup_steps = warmup_steps
        self.generator_batch = generator_batch
        self.labels = labels
        self.student = student
        self.ridge = ridge
        self.buffer_rounds = buffer_rounds
        self.marginal_weight = marginal_weight
        self.condition_numbers = condition_numbers
        self.noise_dim = noise_dim
        self.hidden = hidden
        self.lr = lr
        self.count_share = count_share
        self.device = device
        self.progress = progress
        self.sample_precision = sample_precision

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter (Du & Li 2024) tunes the paper's teachers 10-100 and batches 64-256; with a
        # data-independent bound the vote noise falls with the number of teachers (module docstring),
        # so hundreds to thousands here, and the teachers' kernel width
        return {"n_teachers": ("int", 100, 2000), "iterations": ("int", 100, 1000),
                "batch_size": ("cat", [64, 128, 256]), "length_scale": ("log", 0.25, 2.0)}

    @property
    def queries(self) -> int:
        """Labels the student receives in a run: what the privacy cost counts."""
        return int(self.iterations) * int(self.batch_size)

    def _generator(self, table: FeatureTable, cond_dim: int):
        torch = torch_module()
        return _mlp(torch, [int(self.noise_dim) + cond_dim, *self.hidden], table.dim)

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "PATEGAN":
        """Train teachers, student and generator; the noisy votes and marginals are charged to
        ``budget`` first."""
        if not isinstance(data, FeatureData):
            raise ConfigError(f"pategan fits continuous features (FeatureData), got {type(data).__name__}")
        torch = torch_module()
        dev = resolve_device(self.device, "pategan")
        torch.manual_seed(int(rng.integers(2 ** 62)))
        gen_t = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
        table, k, B = data.table, int(self.n_teachers), int(self.batch_size)
        head = Head(table, dev)
        n_hat, cond, pull = release_marginal_targets(data, head, budget, float(self.count_share), "pategan",
                                                     bool(self.condition_numbers))
        self.total_sigma_ = cond.n_sigma
        # every label is a discrete Gaussian vote histogram of L2 sensitivity sqrt(2): 1/sigma^2 zCDP each
        if budget.private:
            rho = budget.remaining * (1 - 1e-9)
            self.sigma_ = math.sqrt(self.queries / rho)
            budget.charge("pate_votes", dpa.ZCDpEvent(rho), rho,
                          note=f"pategan: {self.queries} noisy votes of {k} teachers, sigma={self.sigma_:.4g}")
            part = budget.noise.integers(k, data.n)  # secret, record by record
        else:
            self.sigma_ = 0.0
            budget.charge("pate_votes", None, math.inf, note="pategan: exact votes (non-private)")
            part = rng.integers(k, size=data.n)
        parts = [np.flatnonzero(part == j) for j in range(k)]  # secret noise on exact rows: never kept
        # the teachers' random features: data-independent, from the user's seed
        scale = float(self.length_scale) * math.sqrt(len(table.schema.columns))
        omega = (torch.randn(table.dim, int(self.n_features), generator=gen_t) / scale).to(dev)
        beta = (torch.rand(int(self.n_features), generator=gen_t) * 2 * math.pi).to(dev)
        teachers = _Teachers(torch, parts, torch.as_tensor(data.x, device=dev), omega, beta)
        G = self._generator(table, cond.dim).to(dev)
        if self.student == "mlp":
            student = _mlp(torch, [table.dim, *self.hidden], 1).to(dev)
            opt_s = torch.optim.Adam(student.parameters(), lr=float(self.lr), betas=(0.5, 0.9))
        else:
            student = _Student(teachers.features, float(self.ridge))
        opt_g = torch.optim.Adam(G.parameters(), lr=float(self.lr), betas=(0.5, 0.9))
        emb = int(self.noise_dim)

        def generate(m, log=False, grad=False):
            if cond.dim:
                blk, cat, c_np = cond.draw(m, rng, log=log)
                c = torch.as_tensor(c_np, device=dev)
            else:
                blk = cat = None
                c = torch.zeros(m, 0, device=dev)
            with torch.set_grad_enabled(grad):
                out = G(torch.cat([torch.randn(m, emb, generator=gen_t).to(dev), c], dim=1))
                # exact categorical draws (Gumbel-max), straight-through gradients for the generator
                return head.activate(out, tau=0.2, generator=gen_t, hard=True), out, blk, cat

        def generator_step(adversarial: bool):
            fake, out, blk, cat = generate(int(self.generator_batch), log=True, grad=True)
            loss = -student(fake).mean() if adversarial else fake.new_zeros(())
            mw = float(self.marginal_weight) if adversarial else 1.0
            if mw > 0:
                # the batch averaged as over conditions drawn by frequency, as sampling draws them: averaged over the
                # log-frequency conditions, the pull pushed the other rows to the majority categories (adult: 86.5 %
                # Private where the table has 74.1 %; 2-way TVD .172 -> .120 with the weights, replayed noise).
                # (DP-CTGAN's private generator draws its conditions by frequency, so its plain average is that one.
                # Drawing PATE-GAN's by frequency instead, unweighted, cost F1 on hmeq: .50 against .55, seeds 0-2)
                w = cond.sampling_weights(blk, cat) if cond.dim else None
                loss = loss + mw * pull.loss(out, fake, weights=w)
            if cond.dim:
                loss = loss + cond.loss(out, blk, cat)
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()

        for _ in range(int(self.warmup_steps) if cond.dim or head.sigm.numel() else 0):
            generator_step(adversarial=False)
        self.steps_run_ = 0
        buf_x, buf_y = [], []
        for _ in progress_bar(range(int(self.iterations)), desc="pategan", enabled=self.progress):
            teachers.refit(generate(int(self.teacher_fakes))[0])
            x_q = generate(B)[0]
            y = torch.as_tensor(self._noisy_labels(teachers.votes(x_q).cpu().numpy(), k, budget), device=dev)
            buf_x, buf_y = (buf_x + [x_q])[-int(self.buffer_rounds):], (buf_y + [y])[-int(self.buffer_rounds):]
            xs, ys = torch.cat(buf_x), torch.cat(buf_y)
            if self.student == "ridge":
                student.fit(xs, ys)
            for _ in range(int(self.student_steps) if self.student == "mlp" else 0):
                loss_s = ((student(xs).squeeze(1) - ys) ** 2).mean()
                opt_s.zero_grad(set_to_none=True)
                loss_s.backward()
                opt_s.step()
            for _ in range(int(self.generator_steps)):
                generator_step(adversarial=True)
            self.steps_run_ += 1
        self._set_fitted(table, G, cond, n_hat)
        return self

    def _noisy_labels(self, votes_real: np.ndarray, k: int, budget: Budget) -> np.ndarray:
        """The (fake, real) vote histogram plus discrete Gaussian noise (charged up front), as the
        student's target: the normalised share ``1/2 + (real - fake) / 2k`` (``"soft"``, unbiased)
        or its argmax (``"hard"``)."""
        votes = np.stack([k - votes_real, votes_real], axis=1).astype(float)
        if budget.private:
            votes = votes + budget.noise.discrete_gaussian(self.sigma_, votes.shape)
        if self.labels == "hard":
            return (votes[:, 1] > votes[:, 0]).astype(np.float32)
        return (0.5 + (votes[:, 1] - votes[:, 0]) / (2.0 * k)).astype(np.float32)

    def _set_fitted(self, table: FeatureTable, G, cond: Conditions, total: float) -> None:
        self._fitted(table)
        self._gen = G.cpu().eval()
        self._cond = cond
        self.total_ = total
        self._sampler = None  # the fused forward pass, made on the first sample

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows from the generator, conditioned on categories drawn by (noisy) frequency,
        categories and flags drawn from its outputs.  The generator runs as
        :class:`~.torch_features.SamplingNet` (the condition gathered): the same network,
        fewer operations."""
        self._require_fit()

        def layers():
            # _mlp: Linear, ReLU, ..., Linear
            linears = [m for m in self._gen if isinstance(m, torch_module().nn.Linear)]
            return [(fc, None, "relu") for fc in linears[:-1]] + [(linears[-1], None, "linear")]

        return self._sample_generator(n, rng, layers, int(self.noise_dim))

    _state_spec = {"total": NUMBER, "frequencies": [("nonempty", [NUMBER])], "weights": ("map", TENSOR)}

    def _get_state(self) -> dict:
        return {"total": self.total_, "frequencies": [f.tolist() for f in self._cond.freq],
                "weights": state_dict_to_json(self._gen)}

    def _set_state(self, state: dict, table) -> None:
        cond = Conditions.from_state(table, state["frequencies"], "pategan", bool(self.condition_numbers))
        G = build_for_saved(lambda: self._generator(table, cond.dim), state["weights"], "pategan")
        load_json_state(G, state["weights"], "pategan")
        self._set_fitted(table, G, cond, float(state["total"]))
