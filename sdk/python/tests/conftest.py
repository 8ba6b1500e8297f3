"""Starts `stepwise dev` (the binary in STEPWISE_BIN) on free ports with
tests/stepwise.yaml for the session, and gives the tests clients of it."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from stepwise_client import Client

KEY = "pysdk-key-0123456789"
READ_KEY = "pysdk-read-key-0123456789"
SIGNING_KEYS = {"erp": "erp-signing-key-0123456789", "gateway": "gateway-signing-key-0123456789"}
CONFIG = Path(__file__).with_name("stepwise.yaml")
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Dev:
    """A running `stepwise dev`: its HTTP base URL, its broker's address
    and the keys it takes (signing_key signs decisions as producer erp)."""

    url: str
    kafka: str
    key: str = KEY
    read_key: str = READ_KEY
    signing_key: str = SIGNING_KEYS["erp"]


def until(what: str, check, timeout: float = 30.0, interval: float = 0.05):
    """until returns check()'s first truthy value, polling it until timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(interval)


def first(reader, match, what: str):
    """first returns the first message of reader (a stepwise_client.kafka
    reader, in a with block) that match accepts, failing once the reader
    stops, after its idle seconds without a message."""
    for message in reader:
        if match(message):
            return message
    raise AssertionError(f"no {what} within {reader.idle}s of quiet")


@pytest.fixture(scope="session")
def dev() -> Iterator[Dev]:
    binary = os.environ.get("STEPWISE_BIN")
    if not binary:
        pytest.fail("STEPWISE_BIN is not set: run `make test-python`, which builds the binary")
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [binary, "dev", "--config", str(CONFIG), "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"],
        env={**os.environ, "STEPWISE_TEST_KEY": KEY, "STEPWISE_TEST_READ_KEY": READ_KEY,
             "STEPWISE_TEST_ERP_SIGNING_KEY": SIGNING_KEYS["erp"],
             "STEPWISE_TEST_GATEWAY_SIGNING_KEY": SIGNING_KEYS["gateway"]},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )
    found: list[tuple[str, str]] = []

    def read_stdout() -> None:  # until the process ends, so its pipe never fills
        for line in proc.stdout:
            m = re.search(r"http=(http://\S+) kafka=(\S+)", line)
            if m and not found:
                found.append((m.group(1), m.group(2)))

    threading.Thread(target=read_stdout, daemon=True).start()

    def log() -> str:
        stderr.seek(0)
        return stderr.read().decode(errors="replace")[-4000:]

    def address() -> tuple[str, str] | None:
        if not found and proc.poll() is not None:
            pytest.fail(f"stepwise dev exited ({proc.returncode}):\n{log()}")
        return found[0] if found else None

    try:
        url, kafka = until("stepwise dev prints its addresses", address, START_TIMEOUT)

        def ready() -> bool:
            try:
                return httpx.get(url + "/readyz", timeout=2).is_success
            except httpx.TransportError:
                return False

        until(f"stepwise dev at {url} is ready", ready, START_TIMEOUT)
        yield Dev(url, kafka)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stderr.close()


@pytest.fixture
def client(dev: Dev) -> Iterator[Client]:
    with Client(dev.url, api_key=dev.key, timeout=30) as c:
        yield c


@pytest.fixture
def run_id() -> str:
    """run_id is a fresh run id, so the tests share one stepwise dev."""
    return "py-" + uuid.uuid4().hex[:12]
