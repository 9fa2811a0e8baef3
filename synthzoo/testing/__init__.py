"""Test tools shipped with synthzoo, for modules written anywhere.

* :func:`check_module` -- the conformance kit every registered module passes (:mod:`.conformance`).
"""

from .conformance import CHECKS, ConformanceError, check_module, partner_config

__all__ = ["CHECKS", "ConformanceError", "check_module", "partner_config"]
