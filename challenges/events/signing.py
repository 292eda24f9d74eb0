"""Standard Webhooks signatures (https://www.standardwebhooks.com/): the secret is
``whsec_`` + base64 of random bytes; a message is signed as
``v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`` with the
decoded secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def secret_new() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def signature(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of a delivery (``timestamp``: now, in epoch seconds)."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(
            secret=secret, msg_id=msg_id, timestamp=timestamp, body=body
        ),
    }
