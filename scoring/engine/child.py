"""The isolated scorer process: ``python -m scoring.engine.child module:Class``.

It imports one (already registry-verified) plugin class, then scores batches sent by
``scoring.engine.isolated`` over stdin, answering one frame per attempt (or per red/blue
judgement, for a pairing scorer: the batch names ``score_pairing``) on its original
stdout. The plugin's own prints go to stderr, never into the result channel. A per-attempt
SIGALRM turns a plugin that sleeps or loops in Python into a timeout error without losing
the process; the parent kills the process if even that does not stop it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from scoring.engine.framing import read_frame, write_frame
from scoring.engine.protocol import AttemptMetrics, ScoringContext
from scoring.engine.red_blue import PAIRING_METHOD
from scoring.engine.registry import import_entrypoint


class _Timeout(BaseException):  # BaseException: a plugin's `except Exception` can't swallow it
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _encode(message: list[Any]) -> bytes:
    try:
        return json.dumps(message, allow_nan=True).encode()
    except (TypeError, ValueError) as exc:
        return json.dumps(["err", f"the result is not plain JSON: {exc}"]).encode()


def _timed(call: Callable[[], Any], timeout_ms: int) -> list[Any]:
    """``["ok", call()]``, or ``["err", why]`` when it raised or ran past ``timeout_ms``."""
    signal.setitimer(signal.ITIMER_REAL, timeout_ms / 1000.0)
    try:
        return ["ok", call()]
    except _Timeout:
        return ["err", f"timed out after {timeout_ms} ms"]
    except BaseException as exc:
        return ["err", f"{type(exc).__name__}: {exc}"[:2000]]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _score_one(scorer: Any, item: list[Any], config: dict[str, Any], timeout_ms: int) -> list[Any]:
    metrics, ctx = AttemptMetrics(**item[0]), ScoringContext(**item[1])
    return _timed(lambda: scorer.score(metrics, config, ctx), timeout_ms)


def _score_pairing(
    scorer: Any, item: dict[str, Any], config: dict[str, Any], timeout_ms: int
) -> list[Any]:
    return _timed(lambda: getattr(scorer, PAIRING_METHOD)(item, config), timeout_ms)


def main() -> None:
    channel_in = sys.stdin.buffer
    channel_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # the plugin's prints go to stderr
    sys.stdout = sys.stderr
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        scorer = import_entrypoint(sys.argv[1])()
    except BaseException as exc:
        write_frame(channel_out, _encode(["fatal", f"cannot load scorer: {exc}"]))
        return
    write_frame(channel_out, _encode(["ready"]))
    while True:
        frame = read_frame(channel_in)
        if frame is None:  # the parent closed the pipe: we are done
            return
        batch = json.loads(frame)
        one = _score_pairing if batch.get("method") == PAIRING_METHOD else _score_one
        for item in batch["items"]:
            reply = one(scorer, item, batch["config"], batch["timeout_ms"])
            write_frame(channel_out, _encode(reply))


if __name__ == "__main__":
    main()
