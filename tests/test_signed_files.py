"""Signed model files (``save(sign_with=...)`` / ``load(trusted_keys=...)``) against an attacker who holds a
legitimately signed file and the code: whatever loads under trusted keys is what was signed, and every refusal
-- of the file, of a key file, of the ``trusted_keys`` argument -- is a :class:`ConfigError` (on the command
line exit code 2 and one ``synthzoo: error:`` line), never a traceback."""

import json
import warnings

import pytest

import synthzoo as sz
from synthzoo.cli import main
from synthzoo.core.errors import ConfigError
from synthzoo.datasets import make_demo
from synthzoo.modelfile import generate_key, sign_document

# a public and a private key on secp112r1, a curve OpenSSL 3 parses but cryptography does not load
SECP112R1_PUB = """-----BEGIN PUBLIC KEY-----
MDIwEAYHKoZIzj0CAQYFK4EEAAYDHgAEduV+ZwoyEkJsacWr4Tk+hm/rV9dibdL8
WtVhpQ==
-----END PUBLIC KEY-----
"""
SECP112R1_KEY = """-----BEGIN PRIVATE KEY-----
ME4CAQAwEAYHKoZIzj0CAQYFK4EEAAYENzA1AgEBBA5ZqpFPoUGO33JbCjPmxaEg
Ax4ABHblfmcKMhJCbGnFq+E5PoZv61fXYm3S/FrVYaU=
-----END PRIVATE KEY-----
"""


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """(folder, the unsigned document, the owner's key pair, another key pair); m.json is signed by the owner."""
    d = tmp_path_factory.mktemp("signed")
    df, schema = make_demo(n=300, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = sz.make("mst", epsilon=1.0, delta=1e-5, schema=schema, seed=0, model={"iters": 50}).fit(df)
    owner, other = generate_key(d / "owner"), generate_key(d / "other")
    synth.save(d / "m.json", sign_with=owner[0])
    return d, synth.to_json(), owner, other


def _load(path, trusted_keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sz.Synthesizer.load(path, trusted_keys=trusted_keys)


def test_a_key_on_a_curve_cryptography_cannot_load_is_a_config_error(signed, tmp_path, capsys):
    # cryptography's UnsupportedAlgorithm is no ValueError: it came out of load, save and the CLI as a traceback
    d, _, _, _ = signed
    (tmp_path / "k.pub").write_text(SECP112R1_PUB)
    (tmp_path / "k").write_text(SECP112R1_KEY)
    with pytest.raises(ConfigError, match=r"k.pub: not an Ed25519 public key"):
        _load(d / "m.json", [tmp_path / "k.pub"])
    with pytest.raises(ConfigError, match=r"k: not an Ed25519 private key"):
        _load(d / "m.json", None).save(tmp_path / "m2.json", sign_with=tmp_path / "k")
    assert main(["sample", str(d / "m.json"), "-n", "5", "--out", str(tmp_path / "f.csv"),
                 "--trust", str(tmp_path / "k.pub")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("synthzoo: error: ") and err.count("\n") == 1 and "not an Ed25519 public key" in err


@pytest.mark.parametrize("trusted, match", [
    (False, r"trusted_keys: a public key file or a list of them is expected, got bool False"),
    (0, r"trusted_keys: a public key file or a list of them is expected, got int 0"),
    ([0], r"the public key: a key file's path is expected, got int 0"),  # open(0) read stdin and closed it
    ([None], r"the public key: a key file's path is expected, got NoneType None"),
    (["owner.pub\0"], r"cannot read the public key \(embedded null byte\)"),
])
def test_trusted_keys_that_are_not_key_file_paths_are_config_errors(signed, trusted, match):
    # bool/int gave TypeError "not iterable"; an int entry was opened as a file descriptor (0: stdin, read up to
    # 64 KiB and closed); None gave TypeError; a NUL in a path gave open()'s ValueError
    d, _, _, _ = signed
    with pytest.raises(ConfigError, match=match):
        _load(d / "m.json", trusted)


def test_one_trusted_key_given_as_bytes_is_one_path(signed):
    # bytes were iterated as ints, each opened as a file descriptor ("111: cannot read the public key (Bad file
    # descriptor)", or the data of whatever descriptor was open)
    d, _, (_, pub), _ = signed
    assert _load(d / "m.json", bytes(pub)).signature_["verified"]
    assert _load(d / "m.json", [bytes(pub)]).signature_["verified"]


def test_sign_with_a_file_descriptor_number_is_refused(signed, tmp_path):
    d, _, _, _ = signed
    with pytest.raises(ConfigError, match=r"the private key: a key file's path is expected, got int 0"):
        _load(d / "m.json", None).save(tmp_path / "m2.json", sign_with=0)


def _signed_doc(signed, edit=None):
    d, doc, (key, _), _ = signed
    doc = json.loads(json.dumps(doc))
    if edit:
        edit(doc)
    return sign_document(doc, key)


def test_a_document_with_the_signed_bytes_of_another_is_refused(signed):
    # canonical_bytes writes "\ud83d\ude00" held as two characters as it writes the one character U+1F600: a
    # document handed to from_json with the pair split verified against the other's signature and loaded a
    # schema whose category is another string (every sampled value of it another string)
    from synthzoo.modelfile import canonical_bytes
    _, _, (_, pub), _ = signed
    doc = _signed_doc(signed, lambda d: d["schema"]["columns"]["education"]["categories"].__setitem__(0, "\U0001F600"))
    split = json.loads(json.dumps(doc))
    split["schema"]["columns"]["education"]["categories"][0] = "\ud83d\ude00"
    assert canonical_bytes(split) == canonical_bytes(doc)  # the premise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sz.Synthesizer.from_json(doc, trusted_keys=[pub])
        assert s.schema_["education"].categories[0] == "\U0001F600" and s.signature_["verified"]
        with pytest.raises(ConfigError, match=r"a surrogate pair as two characters"):
            sz.Synthesizer.from_json(split, trusted_keys=[pub])


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["model_state"].__setitem__("x", {1, 2}), r"holds \['set'\] values, which are not JSON data"),
    (lambda d: d["model_state"].__setitem__("x", b"\x00"), r"holds \['bytes'\] values"),
    (lambda d: d["model_state"].__setitem__("x", {1: 0, "a": 0}), r"an object key 1 is not a string"),
    (lambda d: d["schema"]["columns"]["education"].__setitem__("categories", tuple(
        d["schema"]["columns"]["education"]["categories"])), r"holds \['tuple'\] values"),
])
def test_a_document_that_is_not_json_data_is_refused_under_trusted_keys(signed, edit, match):
    # a set, bytes or mixed keys made canonical_bytes raise TypeError out of from_json (a traceback); a tuple
    # verified as the list it is written as
    _, _, (_, pub), _ = signed
    doc = _signed_doc(signed)
    edit(doc)
    with warnings.catch_warnings(), pytest.raises(ConfigError, match=match):
        warnings.simplefilter("ignore")
        sz.Synthesizer.from_json(doc, trusted_keys=[pub])


def test_the_signature_value_has_one_spelling(signed, tmp_path):
    # 64 bytes are 86 base64 digits and "==": the last digit carries 2 bits and 4 that b64decode ignores, so 15
    # other values (another file, another hash) verified as the signed file
    d, _, (_, pub), _ = signed
    doc = json.loads((d / "m.json").read_text())
    value = doc["signature"]["value"]
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    i = digits.index(value[-3])
    for j in range(16):
        other = digits[(i & ~15) | j]
        if other == value[-3]:
            continue
        doc["signature"]["value"] = value[:-3] + other + "=="
        (tmp_path / "m.json").write_text(json.dumps(doc))
        with pytest.raises(ConfigError, match=r"does not match the document"):
            _load(tmp_path / "m.json", [pub])


def test_the_model_file_is_not_written_over_the_signing_key(signed, tmp_path, capsys):
    # `fit --out owner --sign owner` spent the budget, then replaced the private key with the model file it had
    # signed (`tune --out owner --sign owner` with its metadata; `sample --out k.pub --trust k.pub` the public
    # key with the sample); save(k, sign_with=k) alike
    d, _, _, _ = signed
    key, pub = generate_key(tmp_path / "owner")
    pem, public = key.read_bytes(), pub.read_bytes()
    df, schema = make_demo(n=200, seed=0)
    df.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    assert main(["fit", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"), "--synth", "mst",
                 "--out", str(key), "--sign", str(key)]) == 2
    err = capsys.readouterr().err
    assert "is the input file given as --sign" in err and "fitting" not in err
    assert main(["sample", str(d / "m.json"), "-n", "5", "--out", str(pub), "--trust", str(d / "other.pub"),
                 "--trust", str(pub)]) == 2
    assert "is the input file given as --trust" in capsys.readouterr().err
    assert main(["sample", str(d / "m.json"), "-n", "5", "--out", str(pub), "--trust", ""]) == 2
    err = capsys.readouterr().err  # the key's own error, not samefile's "[Errno 2] ... ''" ("" is "." to Path)
    assert err == "synthzoo: error: : cannot read the public key (No such file or directory)\n"
    with pytest.raises(ConfigError, match=r"is the signing key sign_with; writing the model file there would"):
        _load(d / "m.json", None).save(key, sign_with=key)
    from tuning.result import TuneResult
    res = TuneResult.__new__(TuneResult)
    res.synthesizer, res.metadata = _load(d / "m.json", None), {}
    with pytest.raises(ConfigError, match=r"is the signing key sign_with"):
        res.save(key, sign_with=key)
    assert key.read_bytes() == pem and pub.read_bytes() == public


@pytest.mark.parametrize("name", ["", ".", "/"])
def test_keygen_at_a_path_without_a_file_name_is_a_config_error(name, capsys):
    # Path(name).with_name(...) raised ValueError "has an empty name": a traceback from `synthzoo keygen .`
    assert main(["keygen", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith("synthzoo: error: ") and err.count("\n") == 1 and "not a file name for the key" in err
