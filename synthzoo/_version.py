"""The package version, in one place (the package, the model files and the CLI read it)."""

__version__ = "0.1.0"


def code_version() -> str:
    """The version and a digest of this package's Python sources (``0.1.0+3f2a...``): equal wherever the
    same code runs, different after any change to it, released or not (the grid's workers compare it)."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{h.hexdigest()[:12]}"
