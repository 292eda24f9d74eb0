"""`manage.py scorer_check PLUGIN_ID [--config JSON] [--metrics JSON]`.

Runs a registered scorer plugin through Podium's own runner (isolated process, timeout,
failure rules, clamping) over edge cases — a typical success, a failure, every metric
null, zeros, the largest accepted values, rating 10 — and any ``--metrics`` given (a
JSON object or a list of them), printing one row per case: the metrics, the score that
would be recorded or null and why, clamping, the details, and the time it took.

Exit status 0 when the plugin loads and runs (whatever it scores); non-zero with a
one-line error naming the plugin and the cause when it cannot load or the config is
invalid.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.engine.protocol import (
    MAX_METRIC,
    MAX_TIMEOUT_MS,
    METRIC_KEYS,
    AttemptMetrics,
    ConfigError,
    RegistryError,
    ScoringContext,
)
from scoring.engine.runner import ScoringSetup, build_scorer
from scoring.project_registry import registry


def _timeout_ms(text: str) -> int:
    """``--timeout-ms``: a whole number of milliseconds a scorer may take (as the admin
    and the API accept), refused by argparse's usage error otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_TIMEOUT_MS:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and {MAX_TIMEOUT_MS:,} ms")
    return value


NOW_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: a fixed "now" keeps runs comparable
EDGE_CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "typical success",
        {"succeeded": True, "tokens_total": 1200, "elapsed_ms": 12_000, "rating": 7},
    ),
    ("failure", {"succeeded": False, "tokens_total": 800, "elapsed_ms": 30_000, "rating": 2}),
    (
        "all metrics null",
        {
            "succeeded": True,  # so a scorer that reads them all meets every None
            "tokens_total": None,
            "elapsed_ms": None,
            "rating": None,
            "created_at": None,
        },
    ),
    ("zeros", {"succeeded": True, "tokens_total": 0, "elapsed_ms": 0, "rating": 0}),
    (
        "largest accepted",
        {"succeeded": True, "tokens_total": MAX_METRIC, "elapsed_ms": MAX_METRIC, "rating": 10},
    ),
    ("rating 10", {"succeeded": True, "tokens_total": 100, "elapsed_ms": 1000, "rating": 10}),
]


def _json_arg(text: str | None, name: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CommandError(f"--{name} is not JSON: {exc}") from None


def _given_cases(raw: Any) -> list[tuple[str, dict[str, Any]]]:
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    cases = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict) or set(item) - set(METRIC_KEYS):
            raise CommandError(
                f"--metrics item {n} must be an object with keys among {', '.join(METRIC_KEYS)}"
            )
        cases.append((f"--metrics {n}", item))
    return cases


class Command(BaseCommand):
    help = "Run a scorer plugin over edge cases through Podium's rules."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("plugin_id")
        parser.add_argument("--config", help="The plugin config (a JSON object).")
        parser.add_argument("--metrics", help="Extra attempts: a JSON object or a list.")
        parser.add_argument(
            "--timeout-ms",
            type=_timeout_ms,
            default=5000,
            help=f"the scorer's time per attempt, 1 to {MAX_TIMEOUT_MS:,} ms (default 5000)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        plugin_id = options["plugin_id"]
        config = _json_arg(options["config"], "config")
        cases = EDGE_CASES + _given_cases(_json_arg(options["metrics"], "metrics"))
        reg = registry()
        try:
            entrypoint = reg.entrypoint_for(plugin_id)
            info = reg.info(plugin_id)
            setup = ScoringSetup(
                "custom", plugin_id, entrypoint, config or {}, options["timeout_ms"]
            )
            scorer = build_scorer(setup, reg)
        except (RegistryError, ConfigError) as exc:
            what = "the config is invalid" if isinstance(exc, ConfigError) else "cannot load"
            raise CommandError(f"scorer_check: plugin {plugin_id!r}: {what}: {exc}") from None
        where = "isolated scorer process" if not info.runs_in_process else "in process (built-in)"
        self.stdout.write(
            f"{plugin_id} — {info.name} ({info.entrypoint}), {where}, "
            f"timeout {setup.timeout_ms} ms\nconfig: {json.dumps(scorer.config, sort_keys=True)}"
        )
        ctx = ScoringContext(
            challenge_id="scorer_check", end_user_id="u1", timeout_ms=setup.timeout_ms
        )
        for name, metrics in cases:
            full = {"created_at": NOW_MS, **metrics}
            started = time.perf_counter()
            [outcome] = scorer.score_many([(AttemptMetrics(**full), ctx)])
            took = (time.perf_counter() - started) * 1000
            recorded = f"null ({outcome.error})" if outcome.score is None else repr(outcome.score)
            clamp = (
                "" if outcome.clamped_from is None else f"  clamped from {outcome.clamped_from!r}"
            )
            details = "" if outcome.error else f"  details={json.dumps(outcome.details)}"
            self.stdout.write(
                f"- {name}: {json.dumps(full)}\n    score={recorded}{clamp}{details}  "
                f"[{took:.1f} ms]"
            )
