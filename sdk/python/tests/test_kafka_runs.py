"""Runs requested on Kafka from Python: a signed request becomes a run
that finishes and is answered created (again: duplicate); one that cannot
become a run is answered rejected with the code POST /v1/runs would give.
tests/stepwise.yaml requires signatures."""

from __future__ import annotations

import pytest

from stepwise_client import Client, NotFoundError
from stepwise_client.kafka import RunRequestOutcomes, RunRequestProducer
from stepwise_client.models import RunRequestOutcome

from conftest import Dev, first


def outcomes_of(dev: Dev, run_id: str, n: int) -> list[RunRequestOutcome]:
    """outcomes_of reads run-request-outcomes until run_id's first n."""
    got: list[RunRequestOutcome] = []
    with RunRequestOutcomes(dev.kafka, idle=30) as outcomes:
        while len(got) < n:
            got.append(first(outcomes, lambda o: o.run_id == run_id, f"outcome {len(got) + 1} of run request {run_id}"))
    return got


def test_a_run_requested_on_kafka_is_created_finishes_and_the_same_request_again_is_a_duplicate(
    dev: Dev, client: Client, run_id: str,
):
    with RunRequestProducer(dev.kafka, producer="erp", key=dev.signing_key) as requests:
        sent = requests.request("quick", "Say hello", run_id=run_id, batch_id=f"{run_id}-b", metadata={"via": "kafka"})

    assert (sent.run_id, sent.producer, len(sent.signature)) == (run_id, "erp", 64)
    (created,) = outcomes_of(dev, run_id, 1)
    assert created.model_dump() == {"v": 1, "run_id": run_id, "batch_id": f"{run_id}-b", "outcome": "created"}
    run = client.runs.wait(run_id, timeout=30)
    assert run.termination.reason == "natural_end"
    assert (run.metadata, run.batch_id) == ({"via": "kafka"}, f"{run_id}-b")
    assert client.batches.get(f"{run_id}-b").total == 1

    with RunRequestProducer(dev.kafka, producer="erp", key=dev.signing_key) as requests:
        requests.request("quick", "Say hello", run_id=run_id, batch_id=f"{run_id}-b", metadata={"via": "kafka"})

    assert [o.outcome for o in outcomes_of(dev, run_id, 2)] == ["created", "duplicate"]
    assert client.runs.get(run_id).updated_at == run.updated_at


@pytest.mark.parametrize("signer, agent, code, says", [
    ("erp", "no-such-agent", "invalid_request", "no-such-agent"),
    (None, "quick", "unauthorized", ""),
])
def test_a_run_request_that_cannot_become_a_run_is_rejected_with_its_code(
    dev: Dev, client: Client, run_id: str, signer, agent, code, says,
):
    signing = {"producer": "erp", "key": dev.signing_key} if signer else {}
    with RunRequestProducer(dev.kafka, **signing) as requests:
        requests.request(agent, "Say hello", run_id=run_id)

    (rejected,) = outcomes_of(dev, run_id, 1)
    assert (rejected.outcome, rejected.code) == ("rejected", code)
    assert rejected.reason and says in rejected.reason
    with pytest.raises(NotFoundError):
        client.runs.get(run_id)
