"""Exceptions raised by synthzoo. Each names the column or parameter at fault."""


class SynthzooError(Exception):
    """Base class for every error synthzoo raises on purpose."""


class SchemaError(SynthzooError, ValueError):
    """A frame does not match its schema, or the schema itself is malformed."""


class ConfigError(SynthzooError, ValueError):
    """A synthesizer was configured with an impossible parameter or module combination."""


class BudgetExceededError(SynthzooError, RuntimeError):
    """A privacy charge would take the ledger past the requested (epsilon, delta)."""


class NotFittedError(SynthzooError, RuntimeError):
    """``sample`` or ``save`` was called before ``fit``."""


class PrivacySettingsWarning(UserWarning):
    """A privacy request that is allowed but dubious (delta not small against plausible row counts,
    a table too small for its epsilon)."""
