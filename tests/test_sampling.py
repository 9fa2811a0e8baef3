"""Sampling that scales: fixed blocks seeded by (seed, block), so one-go, chunked and streamed
samples hold the same rows; GUM's record pool; the generator models' sampling head."""

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
import synthzoo.pipeline as pipeline
from synthzoo.core.errors import ConfigError
from synthzoo.datasets import make_demo
from synthzoo.models.torch_mlp import TorchMLP, torch_module

SMALL = {"privsyn": {"model": {"name": "gum", "iterations": 20, "pool": 700}},
         "mst": {"model": {"name": "pgm", "iters": 200}},
         "rap++": {"select": {"name": "rap++", "rounds": 3, "q": 2}, "model": {"name": "rp", "n_rows": 100}}}


@pytest.fixture(scope="module")
def fitted():
    df, schema = make_demo(n=1500, seed=1)
    return {name: sz.make(name, epsilon=1.0, schema=schema, seed=0, **kw).fit(df) for name, kw in SMALL.items()}


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(pipeline, "SAMPLE_BLOCK", 500)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_one_go_chunks_and_file_hold_the_same_rows(fitted, small_blocks, name, tmp_path):
    s = fitted[name]
    one_go = s.sample(1800, seed=7)
    assert len(one_go) == 1800
    for chunk in (1, 333, 500, 1200, 5000):
        parts = list(s.sample_chunks(1800, chunk=chunk, seed=7))
        assert [len(p) for p in parts[:-1]] == [chunk] * (len(parts) - 1) and len(parts[-1]) <= chunk
        pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), one_go)
    assert s.sample_to_csv(tmp_path / "f.csv", 1800, chunk=400, seed=7) == 1800
    one_go.to_csv(tmp_path / "g.csv", index=False)
    assert (tmp_path / "f.csv").read_text() == (tmp_path / "g.csv").read_text()
    assert not s.sample(1800, seed=8).equals(one_go)


def test_seedless_calls_are_a_stream_fixed_by_the_seed(fitted, small_blocks, tmp_path):
    s = fitted["mst"]
    s.save(tmp_path / "m.szm")
    a, b = sz.Synthesizer.load(tmp_path / "m.szm"), sz.Synthesizer.load(tmp_path / "m.szm")
    first = a.sample(1200)
    pd.testing.assert_frame_equal(first, pd.concat(list(b.sample_chunks(1200, chunk=250)), ignore_index=True))
    assert not a.sample(1200).equals(first)  # the second call draws on


def test_block_k_depends_on_the_seed_and_k_only(fitted, small_blocks):
    # models without shared state (here PGM): the first blocks of a longer sample are those of a shorter one
    s = fitted["mst"]
    pd.testing.assert_frame_equal(s.sample(1000, seed=3), s.sample(2300, seed=3).iloc[:1000])


def test_chunk_and_seed_are_checked(fitted):
    s = fitted["mst"]
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ConfigError, match="chunk"):
            s.sample_chunks(100, chunk=bad)
    with pytest.raises(ConfigError, match="seed"):
        s.sample(10, seed=-1)
    with pytest.raises(ConfigError, match="n must be"):
        s.sample_chunks(0)


def test_chunks_are_drawn_lazily(fitted, small_blocks, monkeypatch):
    s = fitted["mst"]
    calls = []
    real = s.model.sample
    monkeypatch.setattr(s.model, "sample", lambda n, rng: calls.append(n) or real(n, rng))
    it = s.sample_chunks(10 ** 9, chunk=500, seed=0)  # a billion rows: only what is read is drawn
    next(it)
    assert calls == [500]


def test_gum_pool_up_to_its_size_is_one_gum_run(fitted):
    m = fitted["privsyn"].model
    draw = m.sampler(600, np.random.default_rng(5))
    np.testing.assert_array_equal(np.concatenate([draw(0, 250, None), draw(250, 350, None)]),
                                  m.sample(600, np.random.default_rng(5)))


def test_gum_larger_samples_use_every_pool_record_equally_often(fitted):
    m = fitted["privsyn"].model
    size = max(m.pool, int(np.ceil(m.total_)))
    n = 2 * size + 123
    pool = m.sample(size, np.random.default_rng(9))
    draw = m.sampler(n, np.random.default_rng(9))
    rows = np.concatenate([draw(s, min(400, n - s), None) for s in range(0, n, 400)])

    def canon(a):
        return a[np.lexsort(a.T[::-1])]
    for e in range(2):  # each full pass over the pool is a permutation of it
        np.testing.assert_array_equal(canon(rows[e * size:(e + 1) * size]), canon(pool))
    tail = {tuple(r) for r in rows[2 * size:]}
    assert len(rows[2 * size:]) == 123 and tail <= {tuple(r) for r in pool}
    # the same rows whatever the blocks
    again = m.sampler(n, np.random.default_rng(9))
    np.testing.assert_array_equal(np.concatenate([again(0, 1000, None), again(1000, n - 1000, None)]), rows)


def test_gum_pool_none_fits_all_records(fitted):
    m = fitted["privsyn"].model
    old = m.pool
    try:
        m.pool = None
        n = 3 * old
        draw = m.sampler(n, np.random.default_rng(2))
        np.testing.assert_array_equal(draw(0, n, None), m.sample(n, np.random.default_rng(2)))
    finally:
        m.pool = old


def test_gum_pool_parameter_is_checked():
    with pytest.raises(ConfigError, match="pool"):
        sz.models.GUM(pool=0)


# ------------------------------------------------------------------ generator models' sampling head
class _Net(TorchMLP):
    name = "net"


def test_sampling_net_keeps_exactly_the_real_logits():
    torch = torch_module("test")
    gen = torch.Generator().manual_seed(0)
    sizes = [3, 1, 5, 2]
    K = max(sizes)
    ws = [torch.randn(8, 4, generator=gen), torch.randn(8, generator=gen),
          torch.randn(len(sizes) * K, 8, generator=gen), torch.randn(len(sizes) * K, generator=gen)]
    pad = TorchMLP._pad_mask(sizes, "cpu")
    x = torch.randn(6, 4, generator=gen)
    padded = TorchMLP._padded_logits(ws, x, pad)
    net = TorchMLP._sampling_net(ws, sizes)
    compact = torch.relu(x @ net[0].T + net[1]) @ net[2].T + net[3]
    expect = torch.cat([padded[:, j, :k] for j, k in enumerate(sizes)], dim=1)
    torch.testing.assert_close(compact, expect)


@pytest.mark.parametrize("per", [1, 4])
def test_draw_codes_follow_the_softmaxes(per):
    torch = torch_module("test")
    sizes = [3, 2]
    logits = torch.tensor([np.log([0.2, 0.5, 0.3]).tolist() + np.log([0.9, 0.1]).tolist()], dtype=torch.float32)
    # a network whose output does not depend on its input: every row has the softmaxes above
    net = [torch.zeros(5, 1), logits[0]]
    m = 40_000 // per
    u = np.random.default_rng(0).random((m * per, 2))
    codes = TorchMLP._draw_codes(net, torch.ones(m, 1), sizes, u, per)
    assert codes.shape == (m * per, 2)
    np.testing.assert_allclose(np.bincount(codes[:, 0], minlength=3) / len(codes), [0.2, 0.5, 0.3], atol=0.01)
    np.testing.assert_allclose(np.bincount(codes[:, 1], minlength=2) / len(codes), [0.9, 0.1], atol=0.01)
    # inverse CDF: the same uniforms give the same codes, and small uniforms the first code
    np.testing.assert_array_equal(codes, TorchMLP._draw_codes(net, torch.ones(m, 1), sizes, u, per))
    assert (TorchMLP._draw_codes(net, torch.ones(1, 1), sizes, np.zeros((per, 2)), per) == 0).all()


def test_interrupted_csv_leaves_no_finished_looking_file(fitted, small_blocks, tmp_path, monkeypatch):
    s = fitted["mst"]
    calls = []

    def failing(codes, rng, real=s._decode):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(codes, rng)
    monkeypatch.setattr(s, "_decode", failing)
    with pytest.raises(KeyboardInterrupt):
        s.sample_to_csv(tmp_path / "f.csv", 1500, chunk=500, seed=0)
    assert list(tmp_path.iterdir()) == []


def test_sample_to_a_device_writes_into_it_and_never_replaces_it():
    # sample --out /dev/null renamed its .part file onto /dev/null, as root replacing the device with a file
    import os
    import stat

    df, schema = make_demo(n=300, seed=0)
    s = sz.make("mst", epsilon=1.0, schema=schema).fit(df)
    assert s.sample_to_csv(os.devnull, n=50) == 50
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and not os.path.exists(os.devnull + ".part")


@pytest.mark.parametrize("preset,model", [("tabddpm", {"epochs": 1, "hidden": [16, 16], "embedding_dim": 8}),
                                          ("gem", {"iters": 2, "hidden": [16]})])
def test_a_file_fitted_on_cuda_samples_where_there_is_none(preset, model):
    """A released file must not need its producer's GPU: device='cuda' without CUDA is a warning at
    sampling and the CPU's rows (a fit still refuses it)."""
    import warnings

    if torch_module("test").cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    df, schema = make_demo(n=300, seed=1)
    eps = 1.0 if preset == "gem" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sz.make(preset, epsilon=eps, schema=schema, seed=0, model={**model, "device": "cpu"}).fit(df)
        with pytest.raises(ConfigError, match="device='cuda': no CUDA device"):
            sz.make(preset, epsilon=eps, schema=schema, seed=0, model={**model, "device": "cuda"}).fit(df)
    doc = s.to_json()
    doc["config"]["model"]["device"] = doc["model_state"]["params"]["device"] = "cuda"  # as a GPU machine writes it
    loaded = sz.Synthesizer.from_json(doc)
    with pytest.warns(RuntimeWarning, match="device='cuda' but no CUDA device is available: sampling on the CPU"):
        rows = loaded.sample(50, seed=3)
    pd.testing.assert_frame_equal(rows, s.sample(50, seed=3))


def test_a_compressed_file_name_gets_a_compressed_file(fitted, tmp_path):
    # sample_to_csv (synthzoo sample --out fake.csv.gz) wrote plain text under a .gz name, which pandas, eval and
    # gunzip then refused; split and pandas' to_csv compress by the name, and fit reads .csv.gz
    s = fitted["mst"]
    s.sample(300, seed=3).to_csv(tmp_path / "p.csv", index=False)
    for suffix in (".gz", ".bz2", ".xz"):
        assert s.sample_to_csv(tmp_path / f"f.csv{suffix}", 300, chunk=120, seed=3) == 300
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / f"f.csv{suffix}"), pd.read_csv(tmp_path / "p.csv"))
    for name in ("f.zip", "f.csv.zst", "f.tar.gz"):
        with pytest.raises(ConfigError, match=r"\.gz, \.bz2 or \.xz"):
            s.sample_to_csv(tmp_path / name, 10)
        assert not (tmp_path / name).exists()


def test_a_sample_that_cannot_fit_on_the_disk_stops_after_its_first_chunk(fitted, tmp_path, monkeypatch):
    # sample -n 1e12 --out f.csv began writing a ~100 TB file and went on until the disk was full
    import shutil
    from collections import namedtuple

    s = fitted["mst"]
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10 ** 9, 10 ** 9 - 20_000, 20_000))
    with pytest.raises(ConfigError, match=r"3,000 rows would take about .* bytes a row\), and its disk has 20\.0 kB "
                                          r"free"):
        s.sample_to_csv(tmp_path / "f.csv", 3000, chunk=500, seed=0)
    assert list(tmp_path.iterdir()) == []  # refused after the first chunk; no partial file left
    assert s.sample_to_csv(tmp_path / "g.csv", 100, chunk=500, seed=0) == 100  # one chunk: nothing to foresee


def test_save_and_load_take_open_files_and_bad_paths_are_said_before_any_work(fitted, tmp_path, monkeypatch):
    # save(BytesIO()) and load(open(p, "rb")) raised pathlib's TypeError; sample_to_csv into a missing folder
    # failed, after the model's work, naming "f.csv.part", a file the caller never asked for
    import io

    s = fitted["mst"]
    want = s.sample(50, seed=3)
    for buf in (io.BytesIO(), io.StringIO()):
        s.save(buf)
        buf.seek(0)
        pd.testing.assert_frame_equal(sz.Synthesizer.load(buf).sample(50, seed=3), want)
    with open(tmp_path / "m.szm", "wb") as f:
        s.save(f)
    with open(tmp_path / "m.szm", "rb") as f:
        pd.testing.assert_frame_equal(sz.Synthesizer.load(f).sample(50, seed=3), want)
    with pytest.raises(ConfigError, match=r"the open file: not a synthzoo model file \(it holds more than "
                                          r"max_bytes=10 bytes; not read\)"):
        sz.Synthesizer.load(io.BytesIO(b"{}" * 10), max_bytes=10)
    for bad in (3, None, b"m.szm"):
        with pytest.raises(ConfigError, match=r"load: expected a file name \(str or pathlib.Path\) or an open file, "
                                              f"got {type(bad).__name__}"):
            sz.Synthesizer.load(bad)
    with pytest.raises(ConfigError, match=r"save: expected a file name .* got int"):
        s.save(3)
    monkeypatch.setattr(pipeline.Synthesizer, "_chunks", lambda *a: pytest.fail("sampled before the check"))
    (tmp_path / "plain").write_text("")
    for path, said in ((tmp_path / "nodir" / "f.csv", r"folder '.*nodir' does not exist \(create it first\)"),
                       (tmp_path, r"'.*' is a folder; give a file name inside it"),
                       (tmp_path / "plain" / "f.csv", r"folder '.*plain' is a file, not a folder")):
        with pytest.raises(ConfigError, match="sample_to_csv: " + said):
            s.sample_to_csv(path, 10)
        with pytest.raises(ConfigError, match="save: " + said):
            s.save(path if path != tmp_path else tmp_path)
    assert not list(tmp_path.rglob("*.part"))


def test_every_seed_follows_one_rule(fitted, tmp_path):
    # sample(seed=2**70) was taken where make(seed=2**70) was refused, make_demo(seed=-1) ended in numpy's
    # "expected non-negative integer" and train_test_split(seed=1.5) in SeedSequence's TypeError
    from synthzoo.datasets import make_wide, train_test_split

    s = fitted["mst"]
    df = pd.DataFrame({"a": range(10)})
    calls = {"sample": lambda v: s.sample(5, seed=v), "sample_chunks": lambda v: list(s.sample_chunks(5, seed=v)),
             "sample_to_csv": lambda v: s.sample_to_csv(tmp_path / "f.csv", 5, seed=v),
             "make": lambda v: sz.make("mst", epsilon=1.0, seed=v), "make_demo": lambda v: make_demo(10, seed=v),
             "make_wide": lambda v: make_wide(10, 5, seed=v), "train_test_split": lambda v: train_test_split(df, seed=v)}
    for name, call in calls.items():
        for bad in (-1, 2 ** 63, 2 ** 70, 1.5, True, "3", None if name not in ("sample", "sample_chunks",
                                                                           "sample_to_csv", "make") else -2):
            with pytest.raises(ConfigError, match=r"seed must be a non-negative integer below 2\^63, got "):
                call(bad)
        for good in (0, 2 ** 63 - 1, np.int64(7)):
            call(good)
