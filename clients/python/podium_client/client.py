"""``PodiumClient``: Podium's HTTP API with types, retries and clear errors.

Retries: a 503, or a 429 that carries ``Retry-After``, is sent again after that many
seconds; a connection error (refused, reset, timed out) after an exponential backoff.
A write is retried after a connection error only when it carries an ``Idempotency-Key``
(the server then answers a repeat with the first response and writes nothing): without
a key the first try may have been recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import httpx

from podium_client.types import (
    AttemptIn,
    AttemptOut,
    Challenge,
    ChallengeMetric,
    Leaderboard,
    LeaderboardRow,
    RescoreJob,
)

PAGE_MAX = 500  # the leaderboard's largest ?limit=
RETRY_AFTER_MAX_S = 120.0


class PodiumError(Exception):
    """The server refused a request: ``status`` and its JSON ``body`` (or text)."""

    def __init__(self, status: int, body: Any, method: str = "", path: str = ""):
        self.status = status
        self.body = body
        self.method = method
        self.path = path
        super().__init__(f"{status} on {method} {path}: {error_message(body)}")


class NotFound(PodiumError):
    """A 404: no such object, or (for a route this server lacks) no such route."""


class Unreachable(Exception):
    """No answer after every retry (connection errors, or 503/429 throughout)."""


def error_message(body: Any) -> str:
    """The server's error in one line: ``detail``, else ``field: message`` pairs."""
    if isinstance(body, dict):
        if isinstance(body.get("detail"), str) and len(body) == 1:
            return body["detail"]
        parts = []
        for key, value in body.items():
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            elif isinstance(value, dict):
                value = error_message(value)
            parts.append(f"{key}: {value}")
        return "; ".join(parts)
    return str(body).strip()[:500] or "(no message)"


Sleep = Callable[[float], None]
Notify = Callable[[str], None]


class PodiumClient:
    """A Podium server's API. ``token`` is an API token (``Authorization: Token …``);
    ``max_retries`` bounds the retries of one request (see the module's docstring)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 8,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        on_retry: Notify | None = None,
        sleep: Sleep = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ):
        headers = {"Accept": "application/json", "User-Agent": "podium-client/0.1"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self.url = url.rstrip("/")
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.on_retry = on_retry
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PodiumClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- challenges --------------------------------------------------------------
    def challenges(self) -> list[Challenge]:
        return cast(list[Challenge], self._json("GET", "/api/challenges/"))

    def challenge(self, challenge_id: int) -> Challenge:
        return cast(Challenge, self._json("GET", f"/api/challenges/{int(challenge_id)}/"))

    def challenge_resolve(self, ref: int | str) -> Challenge:
        """A challenge by its id (digits) or its slug. Raises ``NotFound``."""
        text = str(ref).strip()
        if text.isascii() and text.isdigit():
            return self.challenge(int(text))
        for challenge in self.challenges():
            if challenge.get("slug") == text:
                return challenge
        raise NotFound(404, {"detail": f"No challenge with the slug {text!r}."}, "GET", text)

    # -- attempts ----------------------------------------------------------------
    def attempt_record(
        self, challenge_id: int, attempt: AttemptIn, *, idempotency_key: str | None = None
    ) -> AttemptOut:
        return cast(AttemptOut, self._attempts(challenge_id, attempt, idempotency_key)[0])

    def attempts_record(
        self,
        challenge_id: int,
        attempts: list[AttemptIn],
        *,
        idempotency_key: str | None = None,
    ) -> list[AttemptOut]:
        """Record a list, all or nothing. With a key, a retry writes nothing twice."""
        return cast(list[AttemptOut], self._attempts(challenge_id, attempts, idempotency_key)[0])

    def attempts_record_raw(
        self, challenge_id: int, body: bytes, *, idempotency_key: str | None = None
    ) -> tuple[int, bool]:
        """Post an already-encoded JSON list; returns (attempts recorded, replayed)."""
        response = self._send(
            "POST",
            f"/api/challenges/{int(challenge_id)}/attempts/",
            content=body,
            headers=_key_headers(idempotency_key, json_body=True),
            retry_connection=idempotency_key is not None,
        )
        data = response.json()
        count = len(data) if isinstance(data, list) else 1
        return count, response.headers.get("Idempotent-Replayed") == "true"

    def _attempts(self, challenge_id: int, body: Any, key: str | None) -> tuple[Any, bool]:
        response = self._send(
            "POST",
            f"/api/challenges/{int(challenge_id)}/attempts/",
            json=body,
            headers=_key_headers(key),
            retry_connection=key is not None,
        )
        return response.json(), response.headers.get("Idempotent-Replayed") == "true"

    # -- boards ------------------------------------------------------------------
    def leaderboard(
        self,
        challenge_id: int,
        *,
        limit: int | None = None,
        offset: int | None = None,
        player: str | None = None,
    ) -> Leaderboard:
        params: dict[str, Any] = {}
        if limit is not None:
            params["limit"] = limit
        if offset is not None:
            params["offset"] = offset
        if player is not None:
            params["player"] = player
        path = f"/api/challenges/{int(challenge_id)}/leaderboard/"
        return cast(Leaderboard, self._json("GET", path, params=params))

    def leaderboard_rows(
        self, challenge_id: int, *, limit: int | None = None, page: int = PAGE_MAX
    ) -> Iterator[LeaderboardRow]:
        """Rows in rank order, page by page, up to ``limit`` (all when None)."""
        offset = 0
        while limit is None or offset < limit:
            size = page if limit is None else min(page, limit - offset)
            board = self.leaderboard(challenge_id, limit=size, offset=offset)
            yield from board["results"]
            offset += len(board["results"])
            if len(board["results"]) < size or offset >= board["count"]:
                return

    def metrics(self, challenge_id: int) -> list[ChallengeMetric]:
        path = f"/api/challenges/{int(challenge_id)}/metrics/"
        return cast(list[ChallengeMetric], self._json("GET", path))

    def history(self, challenge_id: int) -> Any:
        """The challenge's scoring history (newer servers). ``NotFound`` without it."""
        return self._json("GET", f"/api/challenges/{int(challenge_id)}/history/")

    # -- rescoring (scoring staff, admins) ---------------------------------------
    def rescore(self, challenge_id: int) -> int:
        """Queue a rescore of the current setup; returns the job's id."""
        path = f"/api/challenges/{int(challenge_id)}/rescore/"
        return int(self._json("POST", path)["job"])

    def rescore_job(self, job_id: int) -> RescoreJob:
        return cast(RescoreJob, self._json("GET", f"/api/rescore-jobs/{int(job_id)}/"))

    def rescore_cancel(self, job_id: int) -> RescoreJob:
        path = f"/api/rescore-jobs/{int(job_id)}/cancel/"
        return cast(RescoreJob, self._json("POST", path))

    def rescore_wait(
        self,
        job_id: int,
        *,
        every: float = 0.5,
        on_progress: Callable[[RescoreJob], None] | None = None,
    ) -> RescoreJob:
        """Poll the job until it ends (succeeded, failed or cancelled)."""
        while True:
            job = self.rescore_job(job_id)
            if on_progress is not None:
                on_progress(job)
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return job
            self._sleep(every)

    # -- plumbing ----------------------------------------------------------------
    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, retry_connection=method == "GET", **kwargs).json()

    def _send(
        self, method: str, path: str, *, retry_connection: bool, **kwargs: Any
    ) -> httpx.Response:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if not retry_connection or attempt > self.max_retries:
                    raise Unreachable(f"{method} {self.url}{path}: {exc!r}") from exc
                self._wait(self._backoff(attempt), f"{type(exc).__name__}: {exc}")
                continue
            wait = _retry_after(response)
            if wait is not None:
                if attempt > self.max_retries:
                    raise Unreachable(
                        f"{method} {self.url}{path}: still {response.status_code} "
                        f"after {self.max_retries} retries"
                    )
                self._wait(wait, f"{response.status_code}, Retry-After {wait:g} s")
                continue
            if response.status_code >= 400:
                body = _body(response)
                kind = NotFound if response.status_code == 404 else PodiumError
                raise kind(response.status_code, body, method, path)
            return response

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff * 2 ** (attempt - 1), self.backoff_max)

    def _wait(self, seconds: float, why: str) -> None:
        if self.on_retry is not None:
            self.on_retry(f"{why}; retrying in {seconds:g} s")
        self._sleep(seconds)


def _key_headers(key: str | None, *, json_body: bool = False) -> dict[str, str]:
    headers = {"Content-Type": "application/json"} if json_body else {}
    if key is not None:
        headers["Idempotency-Key"] = key
    return headers


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait before sending again, or None when waiting would not help."""
    if response.status_code not in (429, 503):
        return None
    header = response.headers.get("Retry-After")
    if header is None:
        return 1.0 if response.status_code == 503 else None  # 429 without it: a hard cap
    try:
        return min(max(float(header), 0.0), RETRY_AFTER_MAX_S)
    except ValueError:
        return 1.0


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text
