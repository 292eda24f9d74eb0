"""Is this machine quiet enough for the other benchmarks' ratios to mean something?

    .venv/bin/python bench/quiet.py [--seconds 15]

The same fixed piece of pure Python (no memory traffic to speak of, no system call) is
timed again and again on each CPU in turn, pinned, with nothing else of ours running.
On a quiet machine each run takes the same time; here the spread is what the hypervisor
and the neighbours take. Prints, per CPU, the loops' p10, median, p90 and slowest time
and the spread p90 / p10 (target <= 1.05: the other benches judge ratios whose targets
sit within a tenth of what they measure, so a machine whose own speed moves more than
that from one window to the next cannot tell a code change from noise). Exits non-zero
when a CPU is not quiet. Run it before and after the other benches, nothing else running.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

SPREAD_TARGET = 1.05


def work() -> int:
    total = 0
    for i in range(400_000):  # about 30 ms on a 2026 server core
        total += i * i % 7
    return total


def timings(cpu: int, seconds: float) -> list[float]:
    os.sched_setaffinity(0, {cpu})
    work()  # warm
    times: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="per CPU")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    print(f"a fixed loop, {args.seconds:.0f} s on each CPU in turn, milliseconds:")
    quiet = True
    for cpu in cpus:
        times = timings(cpu, args.seconds)
        deciles = statistics.quantiles(times, n=10)
        p10, p90 = deciles[0], deciles[-1]
        spread = p90 / p10
        quiet &= spread <= SPREAD_TARGET
        print(
            f"  CPU {cpu}: {len(times)} loops  p10 {p10 * 1000:6.1f}  median "
            f"{statistics.median(times) * 1000:6.1f}  p90 {p90 * 1000:6.1f}  slowest "
            f"{times[-1] * 1000:6.1f}  spread p90/p10 {spread:4.2f} "
            f"{'ok' if spread <= SPREAD_TARGET else 'NOISY'} (target <= {SPREAD_TARGET})"
        )
    print("quiet" if quiet else "not quiet: ratios near their targets say little here")
    sys.exit(0 if quiet else 1)


if __name__ == "__main__":
    main()
