"""stepwise_client: a Python client of the stepwise HTTP API.

:class:`Client` (sync) and :class:`AsyncClient` (asyncio), both on httpx,
create, read and cancel runs (``client.runs``), stream a run's events
(resumable with Last-Event-ID), submit batches as JSON Lines and follow them
(``client.batches``), list parked calls and decide them
(``client.pending``, ``client.decide``). Answers are pydantic models of the
gateway's JSON (:mod:`stepwise_client.models`); error answers raise
:class:`APIError` subclasses carrying the envelope's code and message::

    from stepwise_client import Client

    with Client("http://localhost:8080", api_key="...") as sw:
        run = sw.runs.create(agent="assistant", input="Say hello")
        print(sw.runs.wait(run.run_id, timeout=60).status)

:mod:`stepwise_client.kafka` requests runs, reads approval requests and
publishes signed decisions on Kafka.
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
