"""Scorer plugins for tests: each misbehaves in one way the failure rules (docs/scorers.md) cover.

They live in an importable module because isolated plugins run in a child process that
imports them by entrypoint.
"""

from __future__ import annotations

import math
import time


class Constant:
    """Scores every attempt with config['value'] (default 1.0)."""

    name = "Constant"
    config_schema = {
        "type": "object",
        "properties": {"value": {"type": "number", "default": 1.0}},
        "additionalProperties": False,
    }

    def score(self, metrics, config, ctx):
        return {"score": config["value"], "details": {"value": config["value"]}}


class TokensScorer:
    """Score = tokens_total (or 0); fails for tokens_total == 13."""

    def score(self, metrics, config, ctx):
        if metrics.tokens_total == 13:
            raise ValueError("unlucky")
        return {"score": float(metrics.tokens_total or 0)}


class Sleeper:
    """Sleeps config['seconds'] (default 60) when rating == 0, else scores 1."""

    def score(self, metrics, config, ctx):
        if metrics.rating == 0:
            time.sleep(config.get("seconds", 60))
        return {"score": 1.0}


class Stubborn:
    """Swallows even BaseException while sleeping: only a kill stops it."""

    def score(self, metrics, config, ctx):
        if metrics.rating == 0:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    time.sleep(60)
                except BaseException:  # noqa: S110 - that is the point
                    pass
        return {"score": 2.0}


class Crasher:
    """Kills its own process when rating == 0."""

    def score(self, metrics, config, ctx):
        if metrics.rating == 0:
            import os

            os._exit(3)
        return {"score": 3.0}


class Weird:
    """Returns a different broken result per rating."""

    RESULTS = {
        0: None,
        1: {"details": {}},
        2: {"score": "12"},
        3: {"score": math.nan},
        4: {"score": math.inf},
        5: {"score": True},
        6: {"score": -5.0, "details": {"why": "negative"}},
        7: {"score": 10**400},
        8: {"score": 1.0, "details": "not a dict"},
        9: {"score": 1.0, "details": {"bad": object()}},
    }

    def score(self, metrics, config, ctx):
        return self.RESULTS.get(metrics.rating, {"score": 7.5, "details": {"ok": True}})


class Printer:
    """Prints to stdout (must not corrupt the result channel)."""

    def score(self, metrics, config, ctx):
        print("hello from the plugin", flush=True)
        return {"score": 4.0}


class NotAScorer:
    pass


# -- added for tests/scoring ---------------------------------------------------------
class InProcessWeird(Weird):
    """Weird, declaring itself pure: runs in the scoring process if registered as built-in."""

    runs_in_process = True


class InProcessTokensScorer(TokensScorer):
    """TokensScorer, declaring itself pure (in process if registered as built-in)."""

    runs_in_process = True


class InProcessSleeper(Sleeper):
    """Sleeper, declaring itself pure (in process if registered as built-in)."""

    runs_in_process = True


class ReportsPid:
    """Claims runs_in_process (only built-ins may); details carry the scoring pid."""

    runs_in_process = True

    def score(self, metrics, config, ctx):
        import os

        return {"score": 1.0, "details": {"pid": os.getpid()}}


class StubbornReportsPid(Stubborn):
    """Stubborn whose results carry the pid of the process that scored them."""

    def score(self, metrics, config, ctx):
        import os

        result = super().score(metrics, config, ctx)
        return {"score": result["score"], "details": {"pid": os.getpid()}}


class HugeDetails:
    """Returns details over the size cap."""

    def score(self, metrics, config, ctx):
        return {"score": 1.0, "details": {"blob": "x" * 20_000}}


class BadSchema:
    """Declares a config_schema that is a dict but not a valid JSON Schema."""

    config_schema = {"type": "objekt"}

    def score(self, metrics, config, ctx):
        return {"score": 1.0}


class EchoContext:
    """Echoes the metrics, config and context it was given."""

    config_schema = {
        "type": "object",
        "properties": {"k": {"type": "integer", "default": 7}},
    }

    def score(self, metrics, config, ctx):
        return {
            "score": 1.0,
            "details": {
                "metrics": metrics.as_dict(),
                "config": config,
                "ctx": ctx.as_dict(),
            },
        }


class WideDetails:
    """Flat details of short strings that add up to more than the details size cap."""

    def score(self, metrics, config, ctx):
        return {"score": 1.0, "details": {f"k{i}": "x" * 1000 for i in range(30)}}


class InProcessWideDetails(WideDetails):
    """WideDetails, declaring itself pure (in process if registered as built-in)."""

    runs_in_process = True


class BigIntDetails:
    """Details holding an int too long for json.dumps (over Python's 4300-digit limit)."""

    def score(self, metrics, config, ctx):
        return {"score": 1.0, "details": {"n": 10**5000}}


class InProcessBigIntDetails(BigIntDetails):
    """BigIntDetails, declaring itself pure (in process if registered as built-in)."""

    runs_in_process = True


# -- added for tests/realworker ------------------------------------------------------
class SlowTokens:
    """Sleeps config['sleep_ms'] (default 20) per attempt, then scores tokens_total
    (or 0) × config['scale'] (default 1.0): slow enough that a cancel or a SIGKILL lands
    in the middle of a rescore job, and the scale tells one version's scores from
    another's."""

    config_schema = {
        "type": "object",
        "properties": {
            "sleep_ms": {"type": "integer", "minimum": 0, "default": 20},
            "scale": {"type": "number", "default": 1.0},
        },
        "additionalProperties": False,
    }

    def score(self, metrics, config, ctx):
        time.sleep(config.get("sleep_ms", 20) / 1000.0)
        return {"score": float(metrics.tokens_total or 0) * config.get("scale", 1.0)}


class BatchRaises(TokensScorer):
    """Has a batch method that always raises: the runner falls back to score()."""

    runs_in_process = True

    def score_many(self, items, config):
        raise RuntimeError("batch broken")


class BatchWeird:
    """A batch method returning NaN, a negative and a fine score."""

    runs_in_process = True

    def score(self, metrics, config, ctx):
        return {"score": 5.0}

    def score_many(self, items, config):
        return [{"score": math.nan}, {"score": -1.0}, {"score": 5.0}]


class BatchOdd:
    """A built-in batch returning shapes the fast lane must hand to the full rules."""

    runs_in_process = True

    def score(self, metrics, config, ctx):
        return {"score": 1.0}

    def score_many(self, items, config):
        return [
            {"score": 2, "details": None},  # an int: accepted, as a float
            {"score": 1.0, "details": "text"},  # details not a dict: refused
            {"score": math.inf},  # infinite: refused
            "not a dict",  # refused
        ]


# -- added for the guides (issue 20) ---------------------------------------------------
class MappingReader:
    """Reads metrics and ctx every way the plugin guide's typed dicts allow, and
    Podium's attribute way, and reports what it saw."""

    def score(self, metrics, config, ctx):
        seen = {
            "get": metrics.get("rating", 0),
            "get_missing": metrics.get("nope", "default"),
            "item": metrics["rating"],
            "in": "rating" in metrics,
            "not_in": "nope" in metrics,
            "dict": dict(metrics),
            "keys": sorted(metrics.keys()),
            "items": sorted(k for k, _ in metrics.items()),
            "iter": list(metrics),
            "len": len(metrics),
            "attr": metrics.rating,
            "ctx_dict": dict(ctx),
            "ctx_get": ctx.get("challenge_id"),
            "ctx_item": ctx["tenant_id"],
            "ctx_attr": ctx.end_user_id,
            "ctx_challenge_id_type": type(ctx["challenge_id"]).__name__,
        }
        try:
            metrics["rating"] = 1
        except TypeError:
            seen["read_only"] = True
        return {"score": float(metrics.get("rating") or 0), "details": seen}


# -- red/blue pairing scorers (docs/scorers.md, "Pairing scorers") -------------------------
class PairingWeights:
    """Red: config['per_breach'] per breached category plus rating × config['rating_weight'];
    blue: config['per_hold'] per category held."""

    name = "Pairing weights"
    config_schema = {
        "type": "object",
        "properties": {
            "per_breach": {"type": "number", "default": 2},
            "per_hold": {"type": "number", "default": 1},
            "rating_weight": {"type": "number", "default": 0},
        },
        "additionalProperties": False,
    }

    def score_pairing(self, judgement, config):
        breached = sum(1 for code in judgement["suite"] if judgement["categories"][code])
        held = len(judgement["suite"]) - breached
        red = breached * config["per_breach"] + judgement["rating"] * config["rating_weight"]
        return {"red": red, "blue": held * config["per_hold"]}


class PairingWeird:
    """A pairing scorer that misbehaves in a different way per rating."""

    RESULTS = {
        1: None,
        2: {"red": "1", "blue": 1},
        3: {"red": math.nan, "blue": 1},
        4: {"red": 1.0},
        5: {"red": True, "blue": 1},
        6: {"red": -3.0, "blue": 2.0},  # counts 0 for red
        7: [1, 2],
        8: {"red": math.inf, "blue": 0},
    }

    def score_pairing(self, judgement, config):
        if judgement["rating"] == 0:
            raise ValueError("no verdict for me")
        if judgement["rating"] == 9:
            time.sleep(60)
        return self.RESULTS.get(judgement["rating"], {"red": 5.0, "blue": 1.0})


class PairingLeaky:
    """A pairing scorer whose failure message holds a secret (for admins only)."""

    def score_pairing(self, judgement, config):
        raise ValueError("SECRET-ERROR")
