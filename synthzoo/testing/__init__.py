"""Test tools shipped with synthzoo, for modules written anywhere.

* :func:`check_module` -- the conformance kit every registered module passes (:mod:`.conformance`).
* :mod:`.audit` -- empirical differential-privacy audits: Clopper-Pearson lower bounds on epsilon
  from runs on neighbouring inputs (:func:`audit_statistic`, :func:`audit_events`), broken variants
  to prove an audit can see (:class:`ScaledNoiseSource`, :func:`audit_replayed`), and the audits of
  synthzoo's own mechanisms (:mod:`.mechanisms`: :data:`AUDITS`, :func:`run_audits`).
* :func:`adversarial_records` -- records at the extremes of a schema, for sensitivity tests.
"""

from .audit import (
    AuditResult,
    ScaledNoiseSource,
    audit_events,
    audit_replayed,
    audit_statistic,
    clopper_pearson,
    distinguishing_seed,
    epsilon_lower_bound,
    run_pair,
)
from .conformance import CHECKS, ConformanceError, check_module, partner_config
from .mechanisms import AUDITS, NOT_DETECTABLE, AuditRow, format_table, run_audit, run_audits
from .neighbours import adversarial_records

__all__ = ["AUDITS", "CHECKS", "NOT_DETECTABLE", "AuditResult", "AuditRow", "ConformanceError", "ScaledNoiseSource",
           "adversarial_records", "audit_events", "audit_replayed", "audit_statistic", "check_module", "clopper_pearson",
           "distinguishing_seed", "epsilon_lower_bound", "format_table", "partner_config", "run_audit", "run_audits",
           "run_pair"]
