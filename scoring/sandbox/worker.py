"""The program a sandbox worker runs: ``python -I -S -B -c <this file's text>``.

It is started by ``scoring.sandbox.pool`` (under bubblewrap, or directly in the fallback)
and sees nothing of the project: only the standard library, so it imports nothing else.
Its life:

1. fd 0 and 1 are the channel (length-prefixed JSON frames); they are moved aside and
   0, 1, 2 are pointed at /dev/null opened read-only, so the snippet's reads see nothing
   and its writes fail; ``print`` goes to a sink that refuses more than a cap.
2. The setup frame: the snippet's code and the limits. Resource limits, then Landlock
   (required in the fallback, extra in bubblewrap), then the seccomp filter (a BPF
   program the parent compiled with libseccomp) are applied *before* any snippet code
   runs, so every line of it, the module's top level included, runs confined. Then
   ``["loading"]`` (the top level starts now), the top level, and ``["ready"]`` or
   ``["fatal", text]``.
3. Batches: one frame in (``[flush_ms, attempts]``, about 1,000 attempts), then
   ``["part", answers]`` whenever ``flush_ms`` has passed since the last frame out (so the
   parent knows roughly where the worker is) and ``["done", answers, cpu, retire]`` at the
   end. Each attempt runs under a SIGALRM timer; the parent kills a worker that runs
   past its own deadlines, whatever this code or the snippet reports.

Everything this worker sends is re-checked by the parent: the snippet shares this
interpreter and could replace any of this code. What the checks here buy is speed and
clear messages for honest mistakes (a NaN, a set, a 50 MB result), and keeping the
worker alive after them: the worker keeps its own references to what it uses, so a
snippet that patches ``builtins`` or ``json`` does not break the next attempt.
"""

import builtins
import ctypes
import importlib.util
import json
import json.decoder
import json.encoder
import math
import os
import resource
import signal
import struct
import sys
import time
from collections.abc import Mapping as _Mapping
from typing import Any as _Any

# --- references kept before any snippet runs --------------------------------------------
_read, _write, _close, _dup, _dup2, _open = os.read, os.write, os.close, os.dup, os.dup2, os.open
_perf = time.perf_counter
_setitimer, _ITIMER_REAL = signal.setitimer, signal.ITIMER_REAL
_pack_header, _unpack_header = struct.Struct("!I").pack, struct.Struct("!I").unpack
_type, _len, _str, _isfinite, _isinstance = type, len, str, math.isfinite, isinstance
_zip, _enumerate, _min, _memoryview, _hasattr, _any = zip, enumerate, min, memoryview, hasattr, any
_OSError = OSError
_dict, _list, _int, _float, _bool, _none = dict, list, int, float, bool, type(None)
_BaseException, _MemoryError = BaseException, MemoryError
_getrusage, _RUSAGE_SELF = resource.getrusage, resource.RUSAGE_SELF
_scan = json.decoder.JSONDecoder().scan_once
_c_encoder = json.encoder.c_make_encoder
_MAX_SAFE_INT = 2**53
METRIC_KEYS = ("succeeded", "tokens_total", "elapsed_ms", "rating", "created_at")


class _Timeout(BaseException):  # BaseException: `except Exception` in a snippet misses it
    pass


def _on_alarm(signum, frame):
    raise _Timeout


def _encoder():
    """A JSON encoder bound now: later changes to the json module do not reach it."""
    if _c_encoder is not None:
        enc = _c_encoder(
            None, None, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False
        )
        return lambda obj: "".join(enc(obj, 0))
    return json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


_encode = _encoder()


# --- the channel ------------------------------------------------------------------------
class Channel:
    def __init__(self, fd_in, fd_out):
        self.fd_in, self.fd_out = fd_in, fd_out

    def _read_exactly(self, size):
        chunks, got = [], 0
        while got < size:
            chunk = _read(self.fd_in, _min(size - got, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            got += _len(chunk)
        return b"".join(chunks)

    def receive(self):
        header = self._read_exactly(4)
        if header is None:
            return None
        (size,) = _unpack_header(header)
        payload = self._read_exactly(size)
        if payload is None:
            return None
        return _scan(payload.decode("utf-8"), 0)[0]

    def send(self, message):
        self.send_text(_encode(message))

    def send_text(self, text):
        data = text.encode("utf-8")
        view = _memoryview(_pack_header(_len(data)) + data)
        while view:
            written = _write(self.fd_out, view)
            view = view[written:]


class Sink:
    """sys.stdout and sys.stderr: discards text, refuses more than ``cap`` characters
    per attempt (the attempt then fails, even if the snippet catches the error)."""

    def __init__(self, cap):
        self.cap, self.used = cap, 0

    def write(self, text):
        self.used += _len(text)
        if self.used > self.cap:
            raise _OSError(f"the snippet printed more than {self.cap} characters")
        return _len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


# --- confinement --------------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_prctl = _libc.prctl
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_seccomp, SECCOMP_SET_MODE_FILTER = 317, 1
SYS_landlock_create_ruleset, SYS_landlock_add_rule, SYS_landlock_restrict_self = 444, 445, 446


def _fail(what):
    err = ctypes.get_errno()
    raise OSError(err, f"{what}: {os.strerror(err)}")


def set_limits(limits):
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(program):
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(NO_NEW_PRIVS)")
    buffer = ctypes.create_string_buffer(program, _len(program))
    fprog = _Fprog(_len(program) // 8, ctypes.addressof(buffer))
    if _syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(fprog)) != 0:
        _fail("seccomp")


# Landlock access rights (linux/landlock.h), by the ABI version that added them.
_FS_RIGHTS = {1: (1 << 13) - 1, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}
_READ_FILE = 1 << 2
_READ = _READ_FILE | (1 << 3)  # READ_FILE | READ_DIR
_NET_RIGHTS = (1 << 0) | (1 << 1)  # BIND_TCP | CONNECT_TCP (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)


def load_landlock(read_paths):
    """Deny every filesystem access but reading beneath ``read_paths``; deny TCP and, where
    the kernel has it, abstract sockets and signals to processes outside. Returns the ABI
    version used; raises OSError when the kernel has no Landlock."""
    abi = _syscall(SYS_landlock_create_ruleset, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        _fail("landlock")
    fs = sum(bits for version, bits in _FS_RIGHTS.items() if abi >= version)
    attr = struct.pack("<QQQ", fs, _NET_RIGHTS if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = _syscall(SYS_landlock_create_ruleset, attr[:size], size, 0)
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    for path in read_paths:
        try:
            fd = _open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # not on this machine
        rights = _READ if os.path.isdir(path) else _READ_FILE  # a file has no READ_DIR
        rule = struct.pack("<Qi", rights, fd)  # struct landlock_path_beneath_attr (packed)
        result = _syscall(SYS_landlock_add_rule, ruleset, 1, rule, 0)
        _close(fd)
        if result != 0:
            _fail("landlock_add_rule")
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(NO_NEW_PRIVS)")
    if _syscall(SYS_landlock_restrict_self, ruleset, 0) != 0:
        _fail("landlock_restrict_self")
    _close(ruleset)
    return abi


# --- checking what the snippet returned ------------------------------------------------
class Refused(Exception):
    pass


def check_plain(value, budget):
    """Refuse anything but exact JSON types (bool, int within ±2^53, finite float, str,
    None, list, dict with str keys), more than ``budget`` characters, or nesting deeper
    than 16. Iterative: a deep structure cannot blow the stack."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = _type(item)
        if kind is _float:
            if not _isfinite(item):
                raise Refused(f"{item} is not a finite number")
            budget -= 24
        elif kind is _int:
            if not -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                raise Refused("an integer is beyond ±2**53")
            budget -= 20
        elif kind is _str:
            budget -= _len(item) * 2 + 2
        elif kind is _bool or kind is _none:
            budget -= 5
        elif kind is _dict or kind is _list:
            if depth >= 16:
                raise Refused("the result is nested more than 16 levels deep")
            budget -= 2 + _len(item)
            if budget < 0:
                break
            if kind is _dict:
                for key, sub in item.items():
                    if _type(key) is not _str:
                        raise Refused(f"a key is {_type(key).__name__}, not str")
                    budget -= _len(key) * 2 + 3
                    if budget < 0:
                        break
                    stack.append((sub, depth + 1))
            else:
                stack.extend((sub, depth + 1) for sub in item)
        else:
            raise Refused(f"the result holds a {kind.__name__}, which is not plain JSON")
        if budget < 0:
            break
    if budget < 0:
        raise Refused("the result is too large")


# --- running ----------------------------------------------------------------------------
class SolverOutput:
    """What the solver produced: ``.output`` (text) and ``.messages`` (a list); and the
    attempt's five metrics as ``.metrics`` (a dict)."""

    __slots__ = ("messages", "metrics", "output")

    def __init__(self, output, messages, metrics=None):
        self.output, self.messages, self.metrics = output, messages, metrics

    def __repr__(self):
        return f"SolverOutput(output={self.output!r}, messages={self.messages!r})"


class Runner:
    def __init__(self, setup, channel):
        self.setup = setup
        self.channel = channel
        self.timeout_s = setup["timeout_ms"] / 1000.0
        self.max_result = setup["max_result"]
        self.sink = Sink(setup["max_print"])
        self.arity = setup["arity"]
        self.loop = None
        self.function = None
        self.retire = False
        self.builtins = _dict(builtins.__dict__)  # as they were before the snippet ran

    def load(self, code):
        """Run the module's top level; return None or the fatal error's text."""
        # The reference's annotations (`sample: dict[str, Any]`, `solver_output:
        # SolverOutput`) are evaluated at `def` time without `from __future__ import
        # annotations`: both names are defined, so the signatures run as written.
        namespace = {
            "__name__": "snippet",
            "__builtins__": builtins,
            "SolverOutput": SolverOutput,
            "Any": _Any,
        }
        self.namespace = namespace
        try:
            compiled = compile(code, "<snippet>", "exec")
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
        except _BaseException as exc:
            return f"the code cannot be compiled: {_describe(exc)}"
        self.channel.send(["loading"])  # the parent's clock for the top level starts
        try:
            try:
                _setitimer(_ITIMER_REAL, self.timeout_s)
                exec(compiled, namespace)  # noqa: S102 - confined: this is the sandbox
            finally:
                _setitimer(_ITIMER_REAL, 0)
        except _Timeout:
            return f"the module's top-level code ran past {self.setup['timeout_ms']} ms"
        except _BaseException as exc:
            return f"the module's top-level code raised {_describe(exc)}"
        function = namespace.get("compute_scores")
        if not callable(function):
            return "the code defines no compute_scores function"
        self.function = function
        return None

    def run_batch(self, items, flush_s):
        """The answers not yet sent; sends ``["part", ...]`` whenever ``flush_s`` has
        passed since the last frame, so the attempt under way started less than
        ``flush_s`` after the parent last heard from this worker."""
        results = []
        last = _perf()
        remaining = _len(items)
        for item in items:
            if self.retire:
                break  # the rest goes to a fresh worker
            answer = self.run_one(item)
            if answer[1] != "0":  # a failure: undo what it may have done to builtins
                self.restore_builtins()
            results.append(answer)
            remaining -= 1
            if remaining and _perf() - last >= flush_s:
                self.channel.send_text(f'["part",[{",".join(results)}]]')
                results = []
                last = _perf()
        self.restore_builtins()
        return results

    def restore_builtins(self):
        current, saved = builtins.__dict__, self.builtins
        get = current.get
        if _len(current) != _len(saved) or _any(get(k) is not v for k, v in saved.items()):
            current.clear()
            current.update(saved)

    def run_one(self, item):
        """One attempt's answer, as JSON text: [0, result, ms] or [1, error, ms]."""
        sample = item[0]  # exactly the attempt's row (legacy setups get it merged upstream)
        sample = sample if _type(sample) is _dict else {}
        metrics = _dict(_zip(METRIC_KEYS, item[1], strict=False))
        self.namespace["attempt_metrics"] = metrics
        args = (sample,) if self.arity == 1 else (sample, SolverOutput(item[2], item[3], metrics))
        sink = self.sink
        sink.used = 0
        started = _perf()
        try:
            try:
                _setitimer(_ITIMER_REAL, self.timeout_s)
                result = self.function(*args)
                if self.loop is not None:
                    result = self.loop.run_until_complete(result)
                if _type(result) is not _dict and _isinstance(result, _Mapping):
                    result = _plain_mapping(result)  # any Mapping; its items() is timed too
            finally:
                _setitimer(_ITIMER_REAL, 0)
            took = (_perf() - started) * 1000.0
            if took > self.setup["timeout_ms"]:
                raise _Timeout
            if sink.used > sink.cap:
                raise Refused(f"the snippet printed more than {sink.cap} characters")
            if _type(result) is not _dict:
                kind = "a coroutine" if _hasattr(result, "__await__") else _type(result).__name__
                hint = " (declare compute_scores with async def)" if "coroutine" in kind else ""
                raise Refused(f"compute_scores returned {kind}, not a dict{hint}")
            check_plain(result, self.max_result * 4)
            encoded = _encode(result)
            if _len(encoded) > self.max_result:
                raise Refused(f"the result is over {self.max_result} characters of JSON")
            return f"[0,{encoded},{took!r}]"
        except _Timeout:
            if self.loop is not None:
                self.retire = True  # a coroutine may still be pending in the loop
            return _error(f"timed out after {self.setup['timeout_ms']} ms", started)
        except Refused as exc:
            return _error(_str(exc), started)
        except _MemoryError:
            self.retire = True
            return _error("MemoryError: over the sandbox's memory limit", started)
        except _BaseException as exc:
            return _error(_describe(exc), started)


def _plain_mapping(result):
    """A Mapping result (an OrderedDict, a MappingProxy…) as a dict, and its "scores"
    and "metadata" too when they are Mappings."""
    out = _dict(result.items())
    for key in ("scores", "metadata"):
        inner = out.get(key)
        if _type(inner) is not _dict and _isinstance(inner, _Mapping):
            out[key] = _dict(inner.items())
    return out


def _error(text, started):
    return _encode([1, text, (_perf() - started) * 1000.0])


def _describe(exc):
    try:
        text = f"{_type(exc).__name__}: {exc}"
    except _BaseException:
        text = _type(exc).__name__
    return text[:2000]


class LibraryFinder:
    """Resolves the allowed third-party libraries (name → package directory or module
    file, from the parent) and nothing else: no site-packages is on the path."""

    def __init__(self, paths):
        self.paths = paths

    def find_spec(self, name, path=None, target=None):
        where = self.paths.get(name) if "." not in name else None
        if where is None:
            return None  # submodules resolve through their package's __path__
        if where.endswith(".py"):
            return importlib.util.spec_from_file_location(name, where)
        return importlib.util.spec_from_file_location(
            name, where + "/__init__.py", submodule_search_locations=[where]
        )


def main():
    if _len(sys.argv) > 1:  # the libraries a snippet may import (launch.libraries)
        sys.meta_path.append(LibraryFinder(json.loads(sys.argv[1])))
    # The channel, moved aside; the snippet's stdin/stdout/stderr lead nowhere.
    channel = Channel(_dup(0), _dup(1))
    null = _open("/dev/null", os.O_RDONLY)
    for fd in (0, 1, 2):
        _dup2(null, fd)
    _close(null)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    setup = channel.receive()
    if setup is None:
        return
    runner = Runner(setup, channel)
    sys.stdout = sys.stderr = runner.sink
    sys.stdin = None
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        if setup["async"]:
            import asyncio  # before the filter: its event loop needs a socketpair

            runner.loop = asyncio.new_event_loop()
        set_limits(setup["limits"])
        landlock = setup["landlock"]
        if landlock["mode"] != "off":
            try:
                load_landlock(landlock["paths"])
            except OSError:
                if landlock["mode"] == "require":
                    raise
        load_seccomp(bytes.fromhex(setup["seccomp"]))
    except _BaseException as exc:
        channel.send(["fatal", f"the sandbox could not be set up: {_describe(exc)}"])
        return
    error = runner.load(setup["code"])
    if error is not None:
        channel.send(["fatal", error])
        return
    channel.send(["ready"])
    while True:
        batch = channel.receive()
        if batch is None:
            return  # the parent closed the channel: done
        answers = ",".join(runner.run_batch(batch[1], batch[0] / 1000.0))
        usage = _getrusage(_RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime
        retire = "true" if runner.retire else "false"
        channel.send_text(f'["done",[{answers}],{cpu!r},{retire}]')
        if runner.retire:
            return


main()
