"""Core layer: schema, encodings, domains and marginals, privacy ledger and mechanisms, module
contract (parameters, tags, base classes) and registry."""

from .base import (REGISTRY, MeasurementModel, Model, Module, Preprocessor, Selector, available, create, register,
                   unregister)
from .domain import Domain, EncodedData, Measurement, count
from .encoding import BinEncoder, CategoricalEncoder, TableEncoder
from .errors import BudgetExceededError, ConfigError, NotFittedError, SchemaError, SynthzooError
from .privacy.ledger import Budget, PrivacyLedger, PrivacySpent
from .schema import Column, PrivateSchemaWarning, Schema
