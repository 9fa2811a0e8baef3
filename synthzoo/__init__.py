"""synthzoo: tabular data synthesis with and without differential privacy, from interchangeable modules.

    import synthzoo as sz
    synth = sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=sz.Schema.from_json("schema.json"), seed=0)
    synth.fit(train_df)
    fake = synth.sample(10_000)
    print(synth.privacy_report())
"""

from ._version import __version__
from . import datasets, metrics, models, preprocess, select  # noqa: E402  (registers the modules)
from .core import (  # noqa: E402
    BudgetExceededError, Column, ConfigError, Domain, NotFittedError, PrivacyLedger, Schema, SchemaError,
    SynthzooError, available,
)
from .core.dpschema import conform, dp_schema, dp_schema_report, kinds_from_dtypes  # noqa: E402
from .metrics import evaluate  # noqa: E402
from .pipeline import Synthesizer  # noqa: E402
from .presets import available_presets, make  # noqa: E402

__all__ = ["Schema", "Column", "Domain", "Synthesizer", "make", "available", "available_presets",
           "PrivacyLedger", "SchemaError", "ConfigError", "BudgetExceededError", "NotFittedError",
           "SynthzooError", "dp_schema", "conform", "dp_schema_report", "kinds_from_dtypes", "evaluate", "metrics", "preprocess", "select", "models", "__version__"]
