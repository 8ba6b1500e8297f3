"""The exceptions the clients raise.

Every error answer of the gateway is ``{"error": {"code", "message",
"details"?}}``, sometimes with ``run_id``, ``run_ids``, ``batch_id`` or
``decision_id`` naming what was stored or published before the failure (so
the same request can be sent again with those ids). :class:`APIError`
carries all of it; each code has its own subclass, so a caller can catch
``NotFoundError`` rather than compare strings.
"""

from __future__ import annotations

from typing import Any


class StepwiseError(Exception):
    """The base of every exception this package raises."""


class APIError(StepwiseError):
    """An error answer of the gateway.

    ``code`` and ``message`` are the envelope's; ``status`` is the HTTP
    status; ``details`` lists every problem the message sums up (empty when
    there is none). ``run_id``, ``run_ids``, ``batch_id`` and ``decision_id``
    are the envelope's when it names them, else ``None``. An answer that is
    not an envelope (a proxy's error page) gets the code ``http_<status>``
    and its text as the message.
    """

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        err = body.get("error") or {}
        self.status: int = status
        self.code: str = err.get("code") or f"http_{status}"
        self.message: str = err.get("message") or ""
        self.details: list[str] = list(err.get("details") or [])
        self.run_id: str | None = body.get("run_id")
        self.run_ids: list[str] | None = body.get("run_ids")
        self.batch_id: str | None = body.get("batch_id")
        self.decision_id: str | None = body.get("decision_id")
        self.body: dict[str, Any] = body
        super().__init__(f"{status} {self.code}: {self.message}")


class InvalidRequestError(APIError):
    """400 ``invalid_request``: the request was refused; see ``details``."""


class UnauthorizedError(APIError):
    """401 ``unauthorized``: no API key, or one the gateway does not know."""


class ForbiddenError(APIError):
    """403 ``forbidden``: the key lacks the scope, or the origin is refused."""


class NotFoundError(APIError):
    """404 ``not_found``: no such run or batch (or another tenant's)."""


class ConflictError(APIError):
    """409 ``conflict``: a run_id reused with another body, or a run already done."""


class TooManyRequestsError(APIError):
    """429 ``too_many_requests``: too many event streams are open for the key."""


class UnavailableError(APIError):
    """503 ``unavailable``: retrying later may succeed (with the ids it names)."""


_BY_CODE: dict[str, type[APIError]] = {
    "invalid_request": InvalidRequestError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "too_many_requests": TooManyRequestsError,
    "unavailable": UnavailableError,
}


def error_for(status: int, body: dict[str, Any]) -> APIError:
    """error_for returns the exception of an error answer, by its code."""
    code = (body.get("error") or {}).get("code", "")
    return _BY_CODE.get(code, APIError)(status, body)


class WaitTimeout(StepwiseError, TimeoutError):
    """A wait for a run or a batch to finish ran out of time."""
