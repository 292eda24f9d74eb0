"""A run's attempts are spread over every worker its program may hold (the pool's cap):
a rescore batch of a slow snippet is scored by two workers at once on a pool of three,
and another program still finds the slot no single program may take."""

from __future__ import annotations

import threading
import time

import pytest

from scoring import sandbox
from scoring.engine.snippet import Program
from scoring.sandbox import launch
from scoring.sandbox.pool import SandboxPool
from scoring.sandbox.run import SPREAD_MIN

TIMEOUT_MS = 2000
ITEM = "[{},[true,null,null,null,null]]"


def _mode() -> str:
    for mode in launch.MODES:
        if sandbox.probe(mode) is None:
            return mode
    pytest.skip("no sandbox mode available here (CI has bubblewrap and Landlock)")


def _program(owner: str, sleep_s: float) -> Program:
    code = (
        "import time\n"
        "def compute_scores(sample):\n"
        f"    time.sleep({sleep_s})\n"
        "    return {'score': 1.0}\n"
    )
    return Program(owner, code, 1, False, TIMEOUT_MS)


@pytest.fixture
def pool():
    pool = SandboxPool(_mode(), launch.interpreter(), size=3)
    yield pool
    pool.close()


def test_a_run_uses_every_worker_its_program_may_hold(pool):
    assert pool.cap == 2
    program = _program("spread", 0.02)
    raws = pool.run(program, [ITEM] * 12)
    assert [ok for ok, _, _ in raws] == [True] * 12
    assert pool.spawned == 2 and pool.idle_count(program) == 2


def test_a_small_run_stays_on_one_worker(pool):
    program = _program("small", 0.0)
    raws = pool.run(program, [ITEM] * SPREAD_MIN)
    assert all(ok for ok, _, _ in raws)
    assert pool.spawned == 1


def test_another_program_finds_a_slot_beside_a_spread_run(pool):
    slow = _program("slow", 0.2)
    seen_busy = []
    runner = threading.Thread(target=lambda: pool.run(slow, [ITEM] * 20))
    runner.start()
    deadline = time.monotonic() + 10
    while pool.busy_count() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    seen_busy.append(pool.busy_count())
    quick = _program("quick", 0.0)
    started = time.monotonic()
    raws = pool.run(quick, [ITEM] * 3)
    waited = time.monotonic() - started
    runner.join(30)
    assert seen_busy == [2]  # the slow program holds its cap, both workers
    assert all(ok for ok, _, _ in raws)
    # The quick program did not wait for the slow run (about 2 s) to end.
    assert waited < 1.5, waited
