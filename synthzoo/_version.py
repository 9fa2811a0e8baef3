"""The package version, in one place (the package, the model files and the CLI read it)."""

__version__ = "0.1.0"
