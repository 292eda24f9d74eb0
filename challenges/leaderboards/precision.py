"""The precision policy: every score Podium serves is rounded to 12 significant digits.

Scores are stored and ranked as the scorer computed them (a double); what leaves Podium
(the API, the CSV and JSON exports, the pages, the charts, the metrics) is rounded here,
so arithmetic noise such as ``229.00400000000002`` never reaches a user: it reads
``229.004``. Twelve digits keep every value a person or a program could mean (a score
of 1,234,567.89012 is served intact) while dropping the last few bits a sum of floats
gets wrong. Ranks are decided on the stored value; two scores that differ only beyond
the twelfth digit are served equal but keep their stored order (docs/ranking.md).
"""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANT_DIGITS = 12


def served(value: Any) -> Any:
    """A float rounded to the policy's digits; anything else (ints, None, text) as is."""
    if type(value) is float and math.isfinite(value):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return value


def served_json(value: Any) -> Any:
    """``served`` applied to every float inside a JSON value (details, metrics)."""
    if type(value) is float:
        return served(value)
    if isinstance(value, dict):
        return {k: served_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [served_json(v) for v in value]
    return value
