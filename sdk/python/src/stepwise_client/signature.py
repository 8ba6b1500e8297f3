"""Signing decisions and run requests as stepwise verifies them.

With ``decisions.require_signature`` a decision (or a run request) names its
``producer`` and carries ``signature``: the hex HMAC-SHA256, with that
producer's key, of the message's *signing bytes* (docs/topics.md, "Signed
decisions"). This module needs no Kafka client: a producer in any transport
can sign with it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

_UNSIGNED = ("signature", "v")


def signing_bytes(decision: Mapping[str, Any]) -> bytes:
    """signing_bytes is what a message's signature covers, byte for byte as
    stepwise computes it (topics.SigningBytes): the message's JSON without
    ``signature`` and ``v``, keys sorted at every level, no white space, no
    HTML escaping, what ``jq -cS 'del(.signature, .v)'`` prints.

    Go's encoder also escapes U+2028 and U+2029, which Python's leaves as
    they are; NaN and infinities are not JSON and raise ValueError.
    """
    body = {k: v for k, v in decision.items() if k not in _UNSIGNED}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    # Outside strings JSON has no U+2028/U+2029, so replacing them escapes them.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def sign(decision: Mapping[str, Any], producer: str, key: bytes | str) -> dict[str, Any]:
    """sign returns a copy of decision (or of a run request) signed as
    producer with key: ``producer`` set and ``signature`` the hex
    HMAC-SHA256 of its :func:`signing_bytes`. A str key is taken as its
    UTF-8 bytes."""
    if not producer:
        raise ValueError("sign: producer is empty")
    if isinstance(key, str):
        key = key.encode()
    if not key:
        raise ValueError("sign: key is empty")
    signed = {k: v for k, v in decision.items() if k != "signature"}
    signed["producer"] = producer
    signed["signature"] = hmac.new(key, signing_bytes(signed), hashlib.sha256).hexdigest()
    return signed
