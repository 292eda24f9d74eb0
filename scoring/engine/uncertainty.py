"""Evaluation boards: each player's statistic over all their attempts, with intervals.

Plain Python and numpy, no Django. The caller hands in the counted attempts of one board
(player, value, test item, time) and gets back, per player, the statistic (``mean`` or
``sum``), ``n``, a percentile-bootstrap interval at ``ci_level``, the rank under the tie
rule, the rank interval over the replicates and the tier.

- **Paired** when every attempt names its test item: one replicate draws the items with
  replacement and recomputes every player's statistic on the same drawn items, so two
  players who answer every item alike get the same interval. A player's statistic in a
  replicate is taken over their attempts on the drawn items, each counted as often as its
  item was drawn (several attempts on one item all count).
- **Unpaired** otherwise: each player's attempts are resampled on their own.
- **Reproducible**: the generator's seed is a hash of the caller's ``salt`` (challenge and
  version), the setup and the data in a canonical order, so the same board gives the same
  numbers in every process and after a restart, whatever order the rows came in.

Vectorised: a batch of replicates is one matrix product (paired) or one gather per player
(unpaired); no Python loop runs per replicate. Resamples are drawn exactly as
``scipy.stats.bootstrap`` draws them (``rng.integers(0, n, (batch, n))``), and the interval
is ``numpy.percentile`` of the replicates, its ``method="percentile"``.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

AGGREGATES = ("mean", "sum")
SAMPLES_MIN = 100
SAMPLES_MAX = 10_000
# Elements of one batch's largest matrix: bounds memory (about 32 MB a matrix) whatever
# the board's size; a board of 2,000 items runs B = 1,000 in one batch.
BATCH_ELEMENTS = 4_000_000
# Players × items up to which the paired bootstrap keeps two dense tables (128 MB at most).
DENSE_CELLS_MAX = 8_000_000

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class IntervalSetup:
    """How a board's intervals are computed (the challenge's fields, checked there)."""

    aggregate: str = "mean"
    ci_level: float = 0.95
    samples: int = 1000
    min_attempts: int = 1
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}")
        if not 0.0 < self.ci_level < 1.0:
            raise ValueError("ci_level must be between 0 and 1")
        if self.samples < 1:
            raise ValueError("samples must be at least 1")
        if self.min_attempts < 1:
            raise ValueError("min_attempts must be at least 1")


@dataclass(frozen=True)
class PlayerInterval:
    """One player's row. Unranked players (fewer than ``min_attempts``) have no interval."""

    player: int
    score: float
    n: int
    reached: float
    ci_low: float | None = None
    ci_high: float | None = None
    rank: int | None = None
    rank_low: int | None = None
    rank_high: int | None = None
    tier: int | None = None


@dataclass(frozen=True)
class BoardIntervals:
    rows: list[PlayerInterval]  # ranked in rank order, then the unranked by player
    paired: bool
    attempts: int
    items: int  # distinct test items (paired), else 0
    seed: int


def board_intervals(
    *,
    players: Sequence[int],
    values: Sequence[float],
    items: Sequence[str | None] | None = None,
    reached: Sequence[float] | None = None,
    setup: IntervalSetup,
    salt: str,
) -> BoardIntervals:
    """Every player's statistic, interval, rank, rank interval and tier.

    ``players``: each attempt's player id; ``values``: its ranking score (finite);
    ``items``: its test item's key (``None`` where the attempt names none); ``reached``:
    its time (epoch ms), for the tie rule: equal statistics rank the player whose latest
    counted attempt is earlier first, and equal in both share a rank.
    """
    player_arr = np.asarray(players, dtype=np.int64)
    value_arr = np.asarray(values, dtype=np.float64)
    count = len(player_arr)
    if len(value_arr) != count:
        raise ValueError("players and values differ in length")
    if count and not np.isfinite(value_arr).all():
        raise ValueError("values must be finite")
    item_list: list[str | None] = list(items) if items is not None else [None] * count
    reached_arr = np.asarray(reached, dtype=np.float64) if reached is not None else np.zeros(count)
    if len(item_list) != count or len(reached_arr) != count:
        raise ValueError("items and reached must have one entry per attempt")

    paired = count > 0 and all(item is not None for item in item_list)
    item_codes, item_names = _item_codes(item_list) if paired else (np.zeros(count, np.int64), [])
    order = np.lexsort((reached_arr, value_arr, item_codes, player_arr))
    player_arr, value_arr = player_arr[order], value_arr[order]
    item_codes, reached_arr = item_codes[order], reached_arr[order]
    seed = _seed(salt, setup, player_arr, value_arr, item_codes, item_names, reached_arr)

    ids, pidx = np.unique(player_arr, return_inverse=True)
    n = np.bincount(pidx, minlength=len(ids))
    totals = np.bincount(pidx, weights=value_arr, minlength=len(ids)).astype(np.float64)
    scores: FloatArray = totals / n if setup.aggregate == "mean" else totals
    latest = np.full(len(ids), -np.inf)
    np.maximum.at(latest, pidx, reached_arr)
    ranked = n >= setup.min_attempts

    rows_unranked = [
        PlayerInterval(player=int(ids[p]), score=float(scores[p]), n=int(n[p]), reached=latest[p])
        for p in np.flatnonzero(~ranked)
    ]
    ranked_ids = np.flatnonzero(ranked)
    if not len(ranked_ids):
        return BoardIntervals(rows_unranked, paired, count, len(item_names), seed)

    keep = ranked[pidx]
    local = np.searchsorted(ranked_ids, pidx[keep])
    rng = np.random.default_rng(seed)
    if paired:
        replicates = _paired_replicates(
            rng, local, item_codes[keep], value_arr[keep], len(ranked_ids), setup
        )
    else:
        replicates = _unpaired_replicates(seed, local, value_arr[keep], len(ranked_ids), setup)

    alpha = (1.0 - setup.ci_level) / 2.0
    ci_low, ci_high = _percentile_interval(replicates, alpha)
    better = 1.0 if setup.higher_is_better else -1.0
    rank = _point_ranks(scores[ranked_ids] * better, latest[ranked_ids])
    rep_key = np.where(np.isnan(replicates), -np.inf, replicates * better)
    rep_ranks = _competition_ranks(rep_key)
    rank_low = np.minimum(np.percentile(rep_ranks, 100 * alpha, axis=0, method="lower"), rank)
    rank_high = np.maximum(
        np.percentile(rep_ranks, 100 * (1 - alpha), axis=0, method="higher"), rank
    )
    tier = tiers(ci_low, ci_high, higher_is_better=setup.higher_is_better)

    rows = [
        PlayerInterval(
            player=int(ids[p]),
            score=float(scores[p]),
            n=int(n[p]),
            reached=float(latest[p]),
            ci_low=float(ci_low[i]),
            ci_high=float(ci_high[i]),
            rank=int(rank[i]),
            rank_low=int(rank_low[i]),
            rank_high=int(rank_high[i]),
            tier=int(tier[i]),
        )
        for i, p in enumerate(ranked_ids)
    ]
    rows.sort(key=lambda row: (row.rank or 0, -better * row.score, row.reached, row.player))
    return BoardIntervals(rows + rows_unranked, paired, count, len(item_names), seed)


def tiers(ci_low: FloatArray, ci_high: FloatArray, *, higher_is_better: bool = True) -> IntArray:
    """1 + how many players are separably better: their whole interval lies beyond this one's.

    Higher is better: the players whose ``ci_low`` is greater than this ``ci_high``;
    lower is better: those whose ``ci_high`` is less than this ``ci_low``.
    """
    if higher_is_better:
        lows = np.sort(ci_low)
        return 1 + len(lows) - np.searchsorted(lows, ci_high, side="right")
    highs = np.sort(ci_high)
    return 1 + np.searchsorted(highs, ci_low, side="left")


def batch_size(samples: int, width: int) -> int:
    """Replicates drawn per batch for a resample of ``width`` values."""
    return max(1, min(samples, BATCH_ELEMENTS // max(width, 1)))


def _item_codes(items: list[str | None]) -> tuple[IntArray, list[str]]:
    names = sorted({item for item in items if item is not None})
    code = {name: i for i, name in enumerate(names)}
    return np.fromiter((code[item] for item in items if item is not None), np.int64), names


def _seed(
    salt: str,
    setup: IntervalSetup,
    players: IntArray,
    values: FloatArray,
    items: IntArray,
    item_names: list[str],
    reached: FloatArray,
) -> int:
    digest = hashlib.sha256()
    digest.update(f"{salt}\0{setup.aggregate}\0{setup.samples}\0".encode())
    for array in (players, values, items, reached):
        digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(b"\0")
    for name in item_names:
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
    return int.from_bytes(digest.digest()[:8], "big")


def _paired_replicates(
    rng: np.random.Generator,
    players: IntArray,
    items: IntArray,
    values: FloatArray,
    count: int,
    setup: IntervalSetup,
) -> FloatArray:
    """B × players: each row the statistics over one draw of the test items.

    Dense (players × items fits ``DENSE_CELLS_MAX``): a batch is two matrix products with
    the per-player item sums and counts. Sparse (many items, each player answering few):
    a batch weighs each attempt by how often its item was drawn and sums per player, in
    memory bounded by the attempts, not by players × items. Same draws, same numbers."""
    k = int(items.max()) + 1
    dense = count * k <= DENSE_CELLS_MAX
    if dense:
        cell = players * k + items
        sums = np.bincount(cell, weights=values, minlength=count * k).reshape(count, k)
        hits = np.bincount(cell, minlength=count * k).reshape(count, k).astype(np.float64)
    else:
        starts = np.searchsorted(players, np.arange(count))  # attempts sorted by player
    out = np.empty((setup.samples, count))
    step = batch_size(setup.samples, max(k, count) if dense else max(k, len(items)))
    for start in range(0, setup.samples, step):
        size = min(step, setup.samples - start)
        drawn = rng.integers(0, k, (size, k))
        offsets = (drawn + (np.arange(size) * k)[:, None]).ravel()
        weights = np.bincount(offsets, minlength=size * k).reshape(size, k).astype(np.float64)
        if dense:
            totals = weights @ sums.T
            counts = weights @ hits.T if setup.aggregate == "mean" else None
        else:
            each = weights[:, items]  # size × attempts: how often each attempt is drawn
            totals = np.add.reduceat(each * values, starts, axis=1)
            counts = np.add.reduceat(each, starts, axis=1) if setup.aggregate == "mean" else None
        if counts is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                totals /= counts  # 0/0: none of the player's items drawn → NaN
        out[start : start + size] = totals
    return out


def _unpaired_replicates(
    seed: int, players: IntArray, values: FloatArray, count: int, setup: IntervalSetup
) -> FloatArray:
    """B × players: each player's attempts resampled on their own generator."""
    out = np.empty((setup.samples, count))
    bounds = np.searchsorted(players, np.arange(count + 1))
    reduce = np.mean if setup.aggregate == "mean" else np.sum
    for p in range(count):
        own = values[bounds[p] : bounds[p + 1]]
        rng = np.random.default_rng([seed, p])
        step = batch_size(setup.samples, len(own))
        for start in range(0, setup.samples, step):
            size = min(step, setup.samples - start)
            out[start : start + size, p] = reduce(
                own[rng.integers(0, len(own), (size, len(own)))], axis=-1
            )
    return out


def _percentile_interval(replicates: FloatArray, alpha: float) -> tuple[FloatArray, FloatArray]:
    qs = [100 * alpha, 100 * (1 - alpha)]
    if not np.isnan(replicates).any():
        low, high = np.percentile(replicates, qs, axis=0)
        return low, high
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column of NaN only: NaN out
        low, high = np.nanpercentile(replicates, qs, axis=0)
    return low, high


def _competition_ranks(key: FloatArray) -> IntArray:
    """Per row, 1 + how many entries are strictly greater (ties share: 1, 2, 2, 4)."""
    order = np.argsort(-key, axis=-1, kind="stable")
    ordered = np.take_along_axis(key, order, axis=-1)
    positions = np.arange(1, key.shape[-1] + 1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    ranks_sorted = np.maximum.accumulate(np.where(starts, positions, 0), axis=-1)
    ranks = np.empty_like(ranks_sorted)
    np.put_along_axis(ranks, order, ranks_sorted, axis=-1)
    return ranks


def _point_ranks(key: FloatArray, reached: FloatArray) -> IntArray:
    """Competition ranks by ``key`` (higher first), then the earlier ``reached`` first."""
    order = np.lexsort((reached, -key))
    ranks = np.empty(len(key), dtype=np.int64)
    previous: tuple[float, float] | None = None
    for position, i in enumerate(order, start=1):
        current = (float(key[i]), float(reached[i]))
        if current != previous:
            rank = position
            previous = current
        ranks[i] = rank
    return ranks
