"""Every byte from a sandbox worker is hostile (issue 12, finding 2), as a property.

Random and forged frames go to the frame cutter and to a real ``SandboxPool`` whose
"worker" is a small stand-in process (no sandbox needed: it is our own script) that
greets like a worker and then answers each batch with the bytes under test, and then
exits, falls silent, or keeps quiet while still reading. Whatever the bytes, ``run``
returns one answer per attempt without raising, well within the batch's deadline, and
leaves no worker or slot behind.
"""

from __future__ import annotations

import json
import struct
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.engine.framing import FrameBuffer, FrameTooLarge
from scoring.engine.snippet import Program
from scoring.sandbox import launch
from scoring.sandbox import run as run_module
from scoring.sandbox.pool import SandboxPool

pytestmark = pytest.mark.slow

TIMEOUT_MS = 200
STAND_IN = r"""
import os, struct, sys, time
reply, ending = bytes.fromhex(sys.argv[1]), sys.argv[2]

def read_exactly(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data

def receive():
    (size,) = struct.unpack("!I", read_exactly(4))
    return read_exactly(size)

def send(payload):
    os.write(1, struct.pack("!I", len(payload)) + payload)

receive()  # the setup
send(b'["loading"]')
send(b'["ready"]')
while True:
    receive()  # a batch
    os.write(1, reply)
    if ending == "exit":
        sys.exit(0)
    if ending == "silence":
        time.sleep(60)
"""


def frame(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


def stand_in(reply: bytes, ending: str):
    def popen(mode, interp):
        return subprocess.Popen(
            [interp.executable, "-I", "-S", "-c", STAND_IN, reply.hex(), ending],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    return popen


# -- the frame cutter --------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=6),
    limit=st.integers(0, 64),
)
def test_the_frame_cutter_never_raises_but_too_large(data, cuts, limit):
    """Fed in any pieces, it gives exactly the frames a whole read would, or refuses a
    header over the limit; it never reads a frame's bytes it was not given."""
    buffer = FrameBuffer()
    got = []
    at = 0
    try:
        for cut in [*sorted(cuts), len(data)]:
            buffer.feed(data[at:cut] if cut >= at else b"")
            at = max(at, cut)
            while (payload := buffer.next(limit)) is not None:
                got.append(payload)
    except FrameTooLarge:
        return
    expected, rest = [], data
    while len(rest) >= 4 and len(rest) >= 4 + struct.unpack("!I", rest[:4])[0]:
        size = struct.unpack("!I", rest[:4])[0]
        expected.append(rest[4 : 4 + size])
        rest = rest[4 + size :]
    assert got == expected
    assert buffer.pending() == len(rest)


# -- the pool, against a worker that sends anything --------------------------------------------
def _json_values():
    numbers = (
        st.integers()
        | st.integers(min_value=10**300, max_value=10**400)
        | st.floats()  # NaN and infinities become NaN / Infinity in the JSON
        | st.just(-1e308)
    )
    leaves = st.none() | st.booleans() | numbers | st.text(max_size=8)
    return st.recursive(
        leaves,
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids),
        max_leaves=10,
    )


def _answers():
    answer = st.tuples(
        st.sampled_from([0, 1, 2, True, "0"]),
        st.one_of(st.just({"score": 1.0}), st.text(max_size=5), _json_values()),
        st.one_of(st.floats(), st.integers(), st.just(1.5), st.text(max_size=3)),
    ).map(list)
    return st.lists(answer | _json_values(), max_size=4)


def _message():
    return st.one_of(
        st.tuples(st.just("part"), _answers()).map(list),
        st.tuples(
            st.just("done"),
            _answers(),
            st.one_of(st.floats(), st.integers(), st.just(0.1)),
            st.one_of(st.booleans(), _json_values()),
        ).map(list),
        st.sampled_from([["ready"], ["loading"], ["fatal", "x"], ["fatal", 3], [], {}]),
        _json_values(),
    )


def _piece():
    encoded = _message().map(lambda m: json.dumps(m).encode())
    return st.one_of(
        encoded.map(frame),
        st.binary(max_size=40).map(frame),  # any bytes, invalid UTF-8 included
        st.binary(max_size=12),  # unframed garbage
        encoded.map(lambda p: struct.pack("!I", len(p) + 50) + p),  # a frame cut short
        st.integers(2**24, 2**32 - 1).map(lambda n: struct.pack("!I", n) + b"[1"),  # huge
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    pieces=st.lists(_piece(), min_size=1, max_size=3),
    ending=st.sampled_from(["exit", "read", "silence"]),
)
def test_any_reply_settles_every_attempt_and_frees_the_slot(monkeypatch, pieces, ending):
    monkeypatch.setattr(run_module, "GRACE_S", 0.1)
    interp = launch.interpreter()
    if interp is None:
        pytest.skip("no Python beneath /usr for the stand-in")
    pool = SandboxPool(launch.LANDLOCK, interp, size=2, popen=stand_in(b"".join(pieces), ending))
    program = Program("fuzz", "def compute_scores(sample):\n    return {}\n", 1, False, TIMEOUT_MS)
    items = ["[{},[true,null,null,null,null]]"] * 3
    try:
        started = time.monotonic()
        raws = pool.run(program, items)
        took = time.monotonic() - started
        assert len(raws) == len(items)
        for ok, value, ms in raws:
            assert type(ok) is bool
            assert type(value) is (dict if ok else str)
            assert value or not ok or value == {}
            assert ms is None or (type(ms) is float and 0.0 <= ms < 1e9)
        # At worst: a stand-in per attempt, each killed at its deadline, plus starts.
        assert took < len(items) * 2 * (TIMEOUT_MS / 1000 + 0.1 + 0.05 + 1.0) + 5, took
        assert pool.busy_count() == 0
        with pool._cond:
            idle = [w for ws in pool._idle.values() for w in ws]
            assert pool._alive == len(idle)
        assert all(w.proc.poll() is None and not w.frames.pending() for w in idle)
    finally:
        pool.close()


def test_a_well_formed_reply_is_taken_as_the_answers():
    """The stand-in speaks the protocol too: the property above is not vacuous."""
    interp = launch.interpreter()
    if interp is None:
        pytest.skip("no Python beneath /usr for the stand-in")
    reply = frame(b'["part",[[0,{"s":1.0},2.5]]]') + frame(
        b'["done",[[1,"boom",1],[0,{"s":0.5},3]],0.1,false]'
    )
    pool = SandboxPool(launch.LANDLOCK, interp, size=2, popen=stand_in(reply, "read"))
    program = Program("fuzz", "def compute_scores(sample):\n    return {}\n", 1, False, TIMEOUT_MS)
    try:
        raws = pool.run(program, ["[{},[true,null,null,null,null]]"] * 3)
        assert raws == [(True, {"s": 1.0}, 2.5), (False, "boom", 1.0), (True, {"s": 0.5}, 3.0)]
        assert pool.idle_count() == 1 and pool.busy_count() == 0
    finally:
        pool.close()


def test_a_fault_in_the_pool_itself_settles_the_run_and_frees_its_slots(monkeypatch):
    """Never raises, even for a bug of ours: the attempts get the reason, the slot is freed."""
    interp = launch.interpreter()
    if interp is None:
        pytest.skip("no Python beneath /usr for the stand-in")
    reply = frame(b'["done",[[0,{"s":1.0},2.5]],0.1,false]')
    pool = SandboxPool(launch.LANDLOCK, interp, size=2, popen=stand_in(reply, "read"))
    program = Program("fault", "def compute_scores(sample):\n    return {}\n", 1, False, TIMEOUT_MS)

    def broken(self, worker):
        raise RuntimeError("a bug in the pool")

    monkeypatch.setattr(run_module._Run, "_on_readable", broken)
    try:
        raws = pool.run(program, ["[{},[true,null,null,null,null]]"] * 2)
        assert raws == [(False, "the sandbox failed (RuntimeError)", None)] * 2
        assert pool.busy_count() == 0 and pool._alive == pool.idle_count()
    finally:
        pool.close()
