"""Batches: submitted as JSON Lines and followed to the end."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stepwise_client import Client, InvalidRequestError, NotFoundError

from conftest import Dev


def test_a_jsonl_batch_is_followed_until_every_run_is_done(client: Client, run_id: str):
    runs = [{"run_id": f"{run_id}-{i}", "agent": "quick", "input": f"item {i}"} for i in range(5)]

    batch = client.batches.submit(runs)

    assert batch.run_ids == [r["run_id"] for r in runs]
    seen = list(client.batches.follow(batch.batch_id, interval=0.1, timeout=60))
    last = seen[-1]
    assert last.counts == {"done": 5}
    assert last.reasons == {"natural_end": 5}
    assert last.total == 5
    assert (last.usage.input_tokens, last.usage.output_tokens) == (0, 0)  # the script model counts none
    assert [b.counts for b in seen].count({"done": 5}) == 1  # each progress once


def test_a_batch_with_an_invalid_line_creates_nothing(client: Client, run_id: str):
    body = json.dumps({"run_id": run_id, "agent": "quick", "input": "ok"}) + "\n" + '{"agent": "quick"}\n'

    with pytest.raises(InvalidRequestError) as e:
        client.batches.submit(body)

    assert any("item 1" in d for d in e.value.details), e.value.details
    with pytest.raises(NotFoundError):
        client.runs.get(run_id)


def test_the_readme_batch_script_runs(dev: Dev, run_id: str, tmp_path: Path):
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    script = re.search(r"```python\n(import sys\n.*?)```", readme, re.S).group(1)
    (tmp_path / "batch.py").write_text(script)
    lines = [{"run_id": f"{run_id}-{i}", "agent": "quick", "input": "hi"} for i in range(3)]
    lines.append({"run_id": f"{run_id}-slow", "agent": "quick", "input": "hi",
                  "model": {"provider": "script", "turns": [{"text": "I stop here.", "tool_calls": [{"name": "fail", "arguments": {"message": "no"}}]}]}})
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))

    out = subprocess.run(
        [sys.executable, "batch.py", "runs.jsonl"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"STEPWISE_URL": dev.url, "STEPWISE_API_KEY": dev.key, "PATH": ""},
    )

    assert out.returncode == 0, out.stderr
    assert ": 4 runs" in out.stdout
    assert "4/4 done" in out.stdout
