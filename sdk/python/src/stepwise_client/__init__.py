"""stepwise_client: a Python client of the stepwise HTTP API.

:class:`Client` (sync) and :class:`AsyncClient` (asyncio), both on httpx,
create and read runs, submit batches as JSON Lines and follow them, stream a
run's events (resumable with Last-Event-ID), list parked calls, decide them
and cancel runs. Answers are the gateway's JSON, typed in
:mod:`stepwise_client.models`; error answers raise :class:`APIError`
subclasses carrying the envelope's code and message::

    from stepwise_client import Client

    with Client("http://localhost:8080", api_key="...") as sw:
        run = sw.create_run("assistant", "Say hello")
        print(sw.wait_run(run["run_id"], timeout=60)["status"])
"""

from .aio import AsyncClient
from .client import Client
from .errors import (
    APIError, ConflictError, ForbiddenError, InvalidRequestError, NotFoundError, StepwiseError,
    TooManyRequestsError, UnauthorizedError, UnavailableError, WaitTimeout,
)

__all__ = [
    "APIError", "AsyncClient", "Client", "ConflictError", "ForbiddenError", "InvalidRequestError",
    "NotFoundError", "StepwiseError", "TooManyRequestsError", "UnauthorizedError", "UnavailableError",
    "WaitTimeout",
]
