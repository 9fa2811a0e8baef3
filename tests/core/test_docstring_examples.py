"""The examples in the core's docstrings run as written."""

import doctest
import importlib

import pytest

MODULES = ["synthzoo.core.domain", "synthzoo.core.schema", "synthzoo.core.params", "synthzoo.core.privacy.ledger",
           "synthzoo.core.privacy.noise"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
