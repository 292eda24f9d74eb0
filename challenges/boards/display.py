"""How the public pages word and format things: values in each strategy's unit, times,
score breakdowns and the one-sentence scoring rule. Plain functions, formatted once in
Python (a template filter per cell is what makes a leaderboard page slow)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from challenges.leaderboards import precision
from challenges.text import exact_time  # the pages' formatter, written once
from scoring.engine.registry import RegistryError
from scoring.engine.strategies import get_strategy
from scoring.project_registry import registry
from scoring.scorers.weighted import DEFAULTS as WEIGHTED_DEFAULTS

WEIGHTED = "builtin.weighted_scorer"
MEDALS = {1: ("gold", "gold medal"), 2: ("silver", "silver medal"), 3: ("bronze", "bronze medal")}
TERM_LABELS = {"clamped_from": "Total before the floor at 0"}
MAX_TERMS = 32  # a plugin's details are its own: show a readable handful, never a wall
# The weighted scorer's terms (scoring/scorers/weighted.py): its penalties are amounts
# taken off, stored positive as in the original project; a breakdown shows what each
# term adds to the score, so they read negative.
WEIGHTED_TERMS = frozenset({"base", "rating_contribution", "time_penalty", "token_penalty"})
WEIGHTED_LABELS = {"base": "Success bonus", "rating_contribution": "Rating bonus"}
SUBTRACTED = ("time_penalty", "token_penalty")


def format_value(score: float, strategy: str) -> str:
    """The leaderboard value in the unit the strategy or scorer defines: a time, tokens,
    a rating out of 10, a weighted scorer's points; a snippet's score is a plain number
    (a 0/1 score reads 1, never "1.00 pts")."""
    score = precision.served(score)
    if strategy == "python":
        return f"{score:,.4f}".rstrip("0").rstrip(".") if score != int(score) else f"{score:,.0f}"
    unit = get_strategy(strategy).unit
    if unit == "epoch_ms":
        return exact_time(datetime.fromtimestamp(score / 1000, tz=UTC))
    if unit == "ms":
        return f"{score / 1000:,.3f} s"
    if unit == "tokens":
        return f"{score:,.0f} tokens"
    if unit == "rating":
        return f"{score:g} / 10"
    return f"{score:,.2f} pts"


def collection_value(value: float, strategy: str) -> str:
    """A collection's value in its strategy's unit: a sum of board values as a plain
    number, a total time in seconds, total tokens, a mean rating out of 10."""
    value = precision.served(value)
    if strategy == "fastest_total":
        return f"{value / 1000:,.3f} s"
    if strategy == "fewest_tokens_total":
        return f"{value:,.0f} tokens"
    if strategy == "highest_avg_rating":
        return f"{value:.2f}".rstrip("0").rstrip(".") + " / 10"
    return format_value(value, "python")


COLLECTION_WORDS = {
    "sum": "the sum of each player's values on the challenges' boards, highest first",
    "fastest_total": "the total time of each player's successful best attempts, lowest first",
    "fewest_tokens_total": (
        "the total tokens of each player's successful best attempts, lowest first"
    ),
    "highest_avg_rating": (
        "the average rating of each player's successful best attempts, highest first"
    ),
}


UNITS = {"epoch_ms": "epoch_ms", "ms": "ms", "tokens": "tokens", "rating": "rating_0_10"}


def score_unit(strategy: str) -> str:
    """The unit of a raw ``score`` in the exports: "ms" (fastest: 3084.0 is 3.084 s),
    "epoch_ms" (first: the attempt's time), "tokens", "rating_0_10", "points" (a scorer
    plugin's) or "number" (a snippet's own score)."""
    if strategy == "python":
        return "number"
    return UNITS.get(get_strategy(strategy).unit, "points")


def medal(rank: int, score: float, setup: Any) -> tuple[str, str] | None:
    """A medal for the top three, only for a value above the lowest possible one: a
    higher-is-better score of 0 (or a rating of 0) wins nothing."""
    if rank not in MEDALS:
        return None
    if get_strategy(setup.scoring_strategy).descending and score <= 0:
        return None
    return MEDALS[rank]


def relative_time(value: datetime, now: datetime) -> str:
    """ "just now", "5 minutes ago", "3 days ago", or the date for old times."""
    seconds = (now - value).total_seconds()
    if seconds < 60:
        return "in the future" if seconds < -60 else "just now"
    for limit, size, unit in (
        (3600, 60, "minute"),
        (86400, 3600, "hour"),
        (86400 * 30, 86400, "day"),
    ):
        if seconds < limit:
            n = int(seconds // size)
            return f"{n} {unit}{'' if n == 1 else 's'} ago"
    return value.astimezone(UTC).strftime("%Y-%m-%d")  # as the exact times and the admin


def _term_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:+,.2f}".replace("-", "−") if value else "0.00"
    if isinstance(value, str) and len(value) <= 80:
        return value
    return None  # nested or long: not for a table cell


def breakdown(details: Any, metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The terms behind a score, for the public: the scorer's details (never its error,
    never a snippet's metadata) and then the attempt's own metrics."""
    terms: list[tuple[str, str]] = []
    if isinstance(details, dict):
        flat = details.get("scores") if isinstance(details.get("scores"), dict) else details
        weighted = WEIGHTED_TERMS <= flat.keys()
        for key, value in flat.items():
            if key in ("error", "metadata", "scores") or not isinstance(key, str):
                continue
            label = TERM_LABELS.get(key) or key.replace("_", " ").strip().capitalize()
            if weighted:
                label = WEIGHTED_LABELS.get(key, label)
                if key in SUBTRACTED and isinstance(value, int | float):
                    value = 0.0 - value
            shown = _term_value(value)
            if shown is not None:
                terms.append((label, shown))
            if len(terms) >= MAX_TERMS:
                break
    return terms + metric_cells(metrics)


def metric_cells(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """An attempt's own metrics, labelled, in their units (the ones it has)."""
    terms: list[tuple[str, str]] = []
    if metrics.get("succeeded") is not None:
        terms.append(("Succeeded", "yes" if metrics["succeeded"] else "no"))
    if metrics.get("elapsed_ms") is not None:
        terms.append(("Time taken", f"{metrics['elapsed_ms'] / 1000:,.3f} s"))
    if metrics.get("tokens_total") is not None:
        terms.append(("Tokens used", f"{metrics['tokens_total']:,}"))
    if metrics.get("rating") is not None:
        terms.append(("Judge rating", f"{metrics['rating']} / 10"))
    return terms


def _plugin_name(plugin_id: str) -> str | None:
    try:
        return registry().info(plugin_id).name
    except RegistryError:
        return None


def strategy_words(setup: Any) -> str:
    """The strategy in plain words: "Fastest success", "Highest weighted score"…"""
    strategy = setup.scoring_strategy
    if strategy == "custom":
        name = _plugin_name(setup.scoring_plugin_id)
        return f"Highest {name.lower()}" if name else "Highest plugin score"
    if strategy == "python":
        return f"Highest {score_name(setup)}"
    return get_strategy(strategy).label


def score_name(setup: Any) -> str:
    """A snippet's ranking score as people read it: the display name of the metric over
    it when there is one ("field completeness"), else its key in words ("is complete"),
    or "score" when the snippet returns a single unnamed one."""
    key = setup.score_key or ""
    if not key:
        return "score"
    for metric in setup.metrics or []:
        if isinstance(metric, dict) and metric.get("field") == key and metric.get("name"):
            return str(metric["name"]).lower()
    return key.replace("_", " ").strip()


def _number(value: Any) -> str:
    return f"{float(value):g}"


def scoring_sentence(setup: Any) -> str:
    """How scoring works, in one sentence."""
    strategy = setup.scoring_strategy
    best = "each player's best attempt counts"
    if strategy == "first":
        return "The earliest successful attempt ranks first: each player's first success counts."
    if strategy == "fastest":
        return f"Successful attempts are ranked by time taken, fastest first; {best}."
    if strategy == "fewest_tokens":
        return f"Successful attempts are ranked by tokens used, fewest first; {best}."
    if strategy == "highest_rating":
        return (
            f"Successful attempts are ranked by their judge rating (0–10), highest first; {best}."
        )
    if strategy == "custom" and setup.scoring_plugin_id == WEIGHTED:
        c = {**WEIGHTED_DEFAULTS, **(setup.scoring_config or {})}  # the scorer's own defaults
        return (
            f"Each attempt scores {_number(c['success_bonus'])} points for success, "
            f"plus {_number(c['rating_weight'])} per rating point, minus "
            f"{_number(c['time_penalty'])} per second and "
            f"{_number(c['token_penalty'])} per token (never below 0); "
            f"the highest score counts, earlier breaks ties."
        )
    if strategy == "custom":
        name = _plugin_name(setup.scoring_plugin_id) or "a scorer plugin"
        return f"Each attempt is scored by {name}; the highest score counts, earlier breaks ties."
    return (
        f"Each attempt is scored by the challenge's own code; players are ranked by their "
        f"highest {score_name(setup)}, earlier breaks ties."
    )


def switch_summary(*, version: Any, previous: Any, reason: str) -> str:
    """The setup change of a version switch in one public sentence, in the words of the
    scoring summary (never the code or the configuration)."""
    if reason == "batch":
        return "The batch scorers re-scored the attempts; the scoring rule is unchanged."
    now = scoring_sentence(version)
    if previous is None:
        return f"Scoring began: {now}"
    before = scoring_sentence(previous)
    if reason == "rollback":
        lead = f"Version {version.number}'s scoring is back"
    else:
        lead = "The scoring changed"
    if before == now:
        return f"{lead}; the rule reads the same, its details changed: {now}"
    return f"{lead}. Before: {before} Now: {now}"


def _names(items: list[dict[str, Any]]) -> str:
    names = [str(i["display_name"] or i["external_id"]) for i in items]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def switch_sentence(record: Any) -> str:
    """A history record in words: "Version 3 replaced version 2 on 26 Nov 2026 14:05
    UTC: 212 of 480 ranked players moved; Ada entered the top 10; rank agreement τ =
    0.94"."""
    when = record.switched_at.astimezone(UTC).strftime("%d %b %Y %H:%M UTC")
    number = record.version.number
    previous = record.previous_version
    if record.reason == "batch":
        head = f"Version {number} was re-scored by its batch scorers on {when}"
    elif previous is None:
        head = f"Version {number} became the first active version on {when}"
    else:
        again = " again" if record.reason == "rollback" else ""
        head = f"Version {number} replaced version {previous.number}{again} on {when}"
    ranked = record.players_after
    parts = [f"{record.moved} of {ranked} ranked player{'s' if ranked != 1 else ''} moved"]
    if record.entered_top:
        parts.append(f"{_names(record.entered_top)} entered the top 10")
    if record.left_top:
        parts.append(f"{_names(record.left_top)} left the top 10")
    if record.kendall_tau is not None:
        parts.append(f"rank agreement τ = {record.kendall_tau:.2f}")
    return f"{head}: " + "; ".join(parts) + "."
