"""The shipped conformance kit (synthzoo.testing.check_module) over every registered module: one
test per (module, check), so a failure names both."""

import pytest

from synthzoo.core.base import REGISTRY
from synthzoo.testing import CHECKS, check_module

CASES = [(role, name) for role, table in sorted(REGISTRY.items()) for name in sorted(table)]


def test_every_role_has_modules():
    assert all(REGISTRY[r] for r in ("preprocess", "select", "model"))


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("role,name", CASES)
def test_conformance(role, name, check):
    check_module(REGISTRY[role][name], checks=[check])
