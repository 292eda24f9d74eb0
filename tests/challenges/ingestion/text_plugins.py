"""Scorer plugins whose output holds text that cannot be stored everywhere."""

from __future__ import annotations


class SurrogateDetails:
    """Details with a lone surrogate and a NUL, in a key and in values."""

    def score(self, metrics, config, ctx):
        return {"score": 2.0, "details": {"label": "x\ud800", "nul\u0000": "a\u0000b"}}


class SurrogateError:
    """Fails with a message holding a lone surrogate and a NUL."""

    def score(self, metrics, config, ctx):
        raise ValueError("bad \udcff text \u0000 here")


class InProcessSurrogateDetails(SurrogateDetails):
    runs_in_process = True


class InProcessSurrogateError(SurrogateError):
    runs_in_process = True


# -- scoring budget ---------------------------------------------------------------------
SEEN_IN_TRANSACTION: list[bool] = []


class InProcessTransactionProbe:
    """Records whether the database connection is inside a transaction while scoring."""

    runs_in_process = True

    def score(self, metrics, config, ctx):
        from django.db import connection

        SEEN_IN_TRANSACTION.append(connection.in_atomic_block)
        return {"score": float(metrics.rating or 0)}
