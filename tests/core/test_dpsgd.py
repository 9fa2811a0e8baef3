"""The one DP-SGD mechanism: calibrated by the ledger's accountant and charged before the first
step, Poisson batches and noise from the secret source, per-record clipping exact, a public
normaliser, noise-only steps on empty batches."""

import copy
import math

import dp_accounting as dpa
import numpy as np
import pytest
import torch

from synthzoo.core.privacy.dpsgd import DPSGD, batch_for, calibrate_noise_multiplier, dpsgd_event, schedule
from synthzoo.core.privacy.ledger import PrivacyLedger


def _budget(eps=1.0, noise_seed=None):
    led = PrivacyLedger(eps, 1e-5, noise_seed=noise_seed)
    return led, led.stage("model", 1.0)


def test_sigma_is_the_smallest_that_meets_the_stage_budget():
    led, budget = _budget(1.0)
    q, steps = 0.02, 1500
    sigma = calibrate_noise_multiplier(budget, q, steps)
    target = led.epsilon_if([dpa.ZCDpEvent(budget.remaining)])
    assert led.epsilon_if([dpsgd_event(q, sigma, steps)]) <= target * (1 + 1e-9)
    assert led.epsilon_if([dpsgd_event(q, 0.98 * sigma, steps)]) > target


def test_sigma_found_in_few_accountant_calls_and_always_within_the_budget():
    """Brent's method on log sigma: the smallest sigma to a relative 1e-9 in at most 16 accountant calls
    (a bisection took 45), and the returned one always meets the budget, also at q = 1 and at a
    stage's share of the budget."""
    for eps, q, steps, share in [(1.0, 0.02, 1500, 1.0), (1.0, 2 / 3, 2, 0.6), (0.1, 0.01, 5000, 1.0),
                                 (3.0, 1.0, 1, 1.0)]:
        led = PrivacyLedger(eps, 1e-5)
        budget = led.stage("model", share)
        target = led.epsilon_if([dpa.ZCDpEvent(budget.remaining)])
        calls, real = [0], led.epsilon_if

        def counted(*a, **k):
            calls[0] += 1
            return real(*a, **k)

        led.epsilon_if = counted
        sigma = calibrate_noise_multiplier(budget, q, steps)
        assert calls[0] <= 17  # the target, then at most 16 sigmas
        assert real([dpsgd_event(q, sigma, steps)]) <= target
        assert real([dpsgd_event(q, sigma * (1 - 1e-8), steps)]) > target


def test_charged_before_the_first_step_and_never_past_the_request():
    led, budget = _budget(1.0)
    sgd = DPSGD(budget, n_hat=5000, batch_size=100, steps=300, note="t")
    assert [c.mechanism for c in led.charges] == ["dp_sgd"]  # nothing trained yet
    assert led.spent().epsilon <= 1.0 * (1 + 1e-9) and led.spent().epsilon > 0.99
    assert sgd.q == pytest.approx(100 / 5000)


def test_poisson_batches_from_the_secret_source():
    _, budget = _budget(1.0, noise_seed=4)
    sgd = DPSGD(budget, n_hat=2000, batch_size=100, steps=400)
    sizes = np.array([len(i) for i in sgd.batches(2000, np.random.default_rng(0))])
    assert len(sizes) == 400 and abs(sizes.mean() - 100) < 3 and sizes.std() > 5  # binomial, not fixed
    _, b2 = _budget(1.0, noise_seed=4)
    again = DPSGD(b2, n_hat=2000, batch_size=100, steps=400)
    assert [len(i) for i in again.batches(2000, np.random.default_rng(99))] == sizes.tolist()  # not the user rng


def test_two_pass_ghost_clipping_is_the_sum_of_clipped_per_record_gradients():
    torch.manual_seed(0)
    _, budget = _budget(1.0)
    sgd = DPSGD(budget, n_hat=1000, batch_size=50, steps=10, max_grad_norm=0.5)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    ref_net = copy.deepcopy(net)
    x, y = torch.randn(7, 5), torch.randn(7, 1)
    ref = [torch.zeros_like(p) for p in ref_net.parameters()]
    for i in range(7):
        gs = torch.autograd.grad(((ref_net(x[i:i + 1]) - y[i:i + 1]) ** 2).sum(), list(ref_net.parameters()))
        scale = min(1.0, 0.5 / (float(torch.sqrt(sum((g ** 2).sum() for g in gs))) + 1e-6))
        for r, g in zip(ref, gs):
            r += scale * g
    sgd.sigma = 0.0  # the clipping alone
    wrapped, params = sgd.wrap(net), list(net.parameters())
    sgd.backward(wrapped, params, ((wrapped(x) - y) ** 2).squeeze(1))
    for p, r in zip(params, ref):
        torch.testing.assert_close(p.grad * 50, r, atol=1e-5, rtol=1e-5)


def test_noise_scale_and_public_normaliser_and_empty_batches():
    _, budget = _budget(1.0)
    sgd = DPSGD(budget, n_hat=1000, batch_size=40, steps=50, max_grad_norm=2.0)
    p = torch.nn.Parameter(torch.zeros(20000))
    sgd.backward(None, [p], None)  # an empty Poisson batch: the step is noise only
    assert float(p.grad.std()) == pytest.approx(sgd.sigma * 2.0 / 40, rel=0.03)


def test_non_private_run_uses_whole_shuffled_batches_and_no_noise():
    led = PrivacyLedger(None)
    sgd = DPSGD(led.stage("m", 1.0), n_hat=1000, batch_size=64, steps=40)
    batches = list(sgd.batches(1000, np.random.default_rng(0)))
    assert all(len(b) == 64 for b in batches) and math.isinf(led.spent().epsilon) and sgd.sigma == 0


def test_loss_history_recorded_without_privacy_only():
    # the overfit risk model reads a non-private fit's loss curve; a private run must record none
    # (a loss read from the private batch is a release no step's noise covers)
    w = torch.nn.Parameter(torch.ones(3))
    led = PrivacyLedger(None)
    sgd = DPSGD(led.stage("m", 1.0), n_hat=100, batch_size=10, steps=6)
    for k in range(6):
        sgd.backward(None, [w], (w * float(k)).sum().reshape(1).repeat(4))
    assert sgd.losses == pytest.approx([3.0 * k for k in range(6)])
    assert sgd.loss_history(3) == pytest.approx([1.5, 7.5, 13.5])   # per-epoch means of 2 steps each
    _, budget = _budget(1.0)
    private = DPSGD(budget, n_hat=1000, batch_size=40, steps=5)
    p = torch.nn.Parameter(torch.zeros(4))
    private.backward(None, [p], None)
    assert private.losses == [] and private.loss_history(5) is None


def test_a_batch_larger_than_the_table_takes_every_record_once_an_epoch():
    # batch_size=1e9 on ~300 rows gave ceil(epochs * 300 / 1e9) = 1 step in all and had ctgan draw 1e9 generated
    # rows for it (the kernel killed the fit); the batch is now at most the DP record count
    assert schedule(300, 300.0, 10 ** 9) == (300, 1.0) == schedule(300, 300.0, 300)
    assert schedule(300, 300.4, 5000) == (300, 1.0)
    assert schedule(10, 26_000.0, 500) == (520, 500 / 26_000)  # a batch within the table: as it was
    assert batch_for(10 ** 9, 300.4) == 301 and batch_for(10 ** 9, 301.0, multiple=10) == 310
    assert batch_for(64, 300.0, multiple=10) == 64 and batch_for(5, 0.2) == 1


def test_batch_parameters_past_the_limit_are_refused_before_any_fit():
    import synthzoo as sz
    from synthzoo.core.errors import ConfigError
    from synthzoo.core.params import MAX_BATCH

    for preset, name in (("ctgan", "batch_size"), ("pate-gan", "batch_size"), ("tvae", "batch_size"),
                         ("tabddpm", "batch_size"), ("dpmerf", "batch"), ("dp-transformer", "sample_batch")):
        with pytest.raises(ConfigError, match=rf"parameter {name}=1000000000 must be an integer in \[\d, "
                                              rf"{MAX_BATCH}\]"):
            sz.make(preset, epsilon=1.0, delta=1e-5, model={name: 10 ** 9})
