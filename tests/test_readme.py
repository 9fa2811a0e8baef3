"""The README, true for a newcomer: its quick start, Python tour and command-line block run as written."""

import re
import shlex
import warnings
from pathlib import Path

import pandas as pd
import pytest

from conftest import DATASETS
from synthzoo.cli import build_parser, main
from synthzoo.datasets import make_demo

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(section: str, lang: str) -> str:
    """The first ```lang block of the README section ``## section``."""
    text = README.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    m = re.search(rf"```{lang}\n(.*?)```", text[start:end if end > 0 else None], re.S)
    assert m, f"no {lang} block in the README section {section!r}"
    return m.group(1)


def _commands(section: str) -> list[list[str]]:
    """The ``synthzoo ...`` command lines of a section's bash block, comments dropped, as argv lists."""
    out = []
    for ln in _block(section, "bash").splitlines():
        for part in ln.split("#")[0].split("&&"):
            words = shlex.split(part)
            if words[:1] == ["synthzoo"]:
                out.append(words[1:])
    return out


def test_quick_start_commands_exist():
    """The quick start's `synthzoo demo` is a command of the CLI (tests/test_cli.py runs it), and its test
    command is plain pytest from the repository's root, where pyproject.toml configures it."""
    block = _block("Quick start", "bash")
    assert _commands("Quick start") == [["demo"]]
    assert "python -m pytest" in block
    assert "testpaths" in (README.parent / "pyproject.toml").read_text()


def test_python_tour_runs_as_written(tmp_path, monkeypatch, capsys):
    if not (DATASETS / "adult" / "schema.json").exists():
        pytest.skip(f"the Python tour reads ../shared/datasets/adult, not found at {DATASETS} "
                    "(set SYNTHZOO_DATASETS)")
    # the tour's relative paths, from a scratch folder standing where the repository's root stands
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "datasets").symlink_to(DATASETS.resolve(), target_is_directory=True)
    work = tmp_path / "repo"
    work.mkdir()
    monkeypatch.chdir(work)
    code = _block("Python tour", "python")
    ns = {"__name__": "__readme__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "README.md (Python tour)", "exec"), ns)
    out = capsys.readouterr().out
    # what the tour promises: a fitted, saved and reloaded synthesizer whose samples match, its
    # privacy account, a streamed file of the promised size, scores printed
    assert ns["synth"].privacy_spent() == pytest.approx((1.0, 1e-5))
    assert "epsilon=1" in out and "privtree" in out and "indif" in out
    fake = ns["fake"]
    assert list(fake.columns) == list(ns["train"].columns) and len(fake) == 10_000
    assert len(ns["train"]) + len(ns["test"]) == len(ns["df"])
    streamed = pd.read_csv(work / "fake.csv")
    assert len(streamed) == 200_000 and list(streamed.columns) == list(fake.columns)
    assert ns["mixed"].privacy_spent() == pytest.approx((1.0, 1e-5))
    assert (work / "adult.szm").exists() and not list(work.glob("*.part"))


def test_command_line_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """Each `synthzoo` line of the README's command-line block, on the demo table saved as data.csv and
    schema.json.  Every line parses with the CLI's parser as written.  Run as written, except: `demo`
    (tests/test_cli.py runs it), `bench` (the shared datasets, minutes) and `tune` (a study of 20 fits;
    tests/test_cli.py and tests/test_tuning.py run small ones) are only parsed; the 10-million-row
    sample draws 3,000 rows; `eval` scores three metrics (one of each group) instead of all of them,
    which take ~20 CPU s even on this small table (tests/test_cli.py and the metrics' own tests cover
    the rest)."""
    df, schema = make_demo(n=800, seed=0)
    monkeypatch.chdir(tmp_path)
    df.to_csv("data.csv", index=False)
    schema.to_json("schema.json")
    ran = []
    for args in _commands("Command line"):
        build_parser().parse_args(args)  # every option of the README exists as spelled
        if args[0] in ("demo", "bench", "tune"):
            continue
        if args[0] == "sample" and "1e7" in args:
            args[args.index("1e7")] = "3000"
        if args[0] == "eval":
            args += ["--metrics", "tvd_2way,ml_f1,dcr_risk"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(args) == 0, " ".join(args)
        ran.append(args[0])
    assert ran == ["split", "fit", "sample", "sample", "eval", "list"]
    assert len(pd.read_csv("data.train.csv")) == 640 and len(pd.read_csv("data.test.csv")) == 160
    assert len(pd.read_csv("fake.csv")) == 1000 and len(pd.read_csv("big.csv")) == 3000
    out = capsys.readouterr().out
    assert {"tvd_2way", "ml_f1", "dcr_risk"} <= set(out.split())
    assert Path("report.html").stat().st_size > 1000


def test_the_bfloat16_paragraph_names_the_presets_that_have_the_option_and_its_cost_without_bf16():
    """The README's "bfloat16, on request" lists exactly the presets whose model takes sample_precision, and
    says what it costs on CPUs without bf16 instructions (AVX2-only: tens of times slower, and it warns)."""
    import synthzoo as sz
    from synthzoo.presets import PRESETS

    text = README.read_text()
    para = " ".join(text[text.index("**bfloat16, on request.**"):].split("\n\n")[0].split())
    listed = set(re.findall(r"`([a-z-]+)`", para.split(" take ")[0]))
    have = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in PRESETS:
            try:
                synth = sz.make(name, epsilon=1.0)
            except Exception:  # a preset whose optional dependency is missing
                continue
            if "sample_precision" in synth.model.get_params():
                have.add(name)
    assert listed == have and len(have) == 4, (listed, have)
    assert "AVX2-only" in para and "40x" in para and "warns" in para
