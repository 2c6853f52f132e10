"""The batch transport (``rpa_lib.llm.batches``): the OpenAI Batch API driven through the real ``openai`` package
against the test server (``benchmarks.batch_server``), resumed after a kill, and the request files of ``BATCH=files``
answered by an offline engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest

from benchmarks.batch_server import BatchServer
from benchmarks.mock_server import chat_completion, default_answer
from rpa_lib.llm import Budget, BudgetExceeded, LLMFatalError
from rpa_lib.llm.batches import ENDPOINT, Limits, batch_price, jsonl, parse_results, run_round, split_lines, summary
from rpa_lib.llm.retry import RetryPolicy
from rpa_lib.llm.usage import Price

FAST = 0.01  # seconds between polls
REPO = Path(__file__).resolve().parents[1]


def request(i: int, model: str = "gpt-4.1-mini", max_tokens: int = 64) -> dict:
    return {"custom_id": f"req-{i:03d}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": f"What do you fear, number {i}?"}],
                     "temperature": 0.0, "max_tokens": max_tokens, "seed": 0}}


def text(result: dict) -> str:
    return result["body"]["choices"][0]["message"]["content"]


def client_for(server: BatchServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)


def run(lines, folder, client, **options):
    return run_round(lines, mode="openai", folder=folder, client=client, poll_seconds=FAST, **options)


def test_a_round_is_uploaded_started_polled_and_read_back(tmp_path, capsys):
    lines = [request(i) for i in range(5)]
    with BatchServer() as server:
        results = run(lines, tmp_path, client_for(server))
        (file_id,) = [f for f, meta in server.files.items() if meta["purpose"] == "batch"]
        assert server.request_lines(file_id) == lines  # the request file as uploaded
        (batch,) = server.batches.values()
        assert (batch["endpoint"], batch["completion_window"], batch["status"]) == ("/v1/chat/completions", "24h",
                                                                                    "completed")
    assert {cid: text(r) for cid, r in results.items()} == {
        line["custom_id"]: f"echo: {line['body']['messages'][0]['content']}" for line in lines}
    assert all(r["status_code"] == 200 and r["body"]["usage"]["prompt_tokens"] > 0 for r in results.values())
    shown = [line for line in capsys.readouterr().err.splitlines() if line.startswith("round 1 batch 1 (")]
    assert [s.split(": ", 1)[1].rsplit(" (", 1)[0] for s in shown] == [
        "in_progress, 0/5 done, 0 failed", "finalizing, 0/5 done, 0 failed", "completed, 5/5 done, 0 failed"]
    outputs = sorted(p.name for p in (tmp_path / "round-0001").iterdir())
    assert outputs == ["requests-1.jsonl", "results-1.jsonl"]


def test_an_expired_batch_is_resubmitted_for_its_unanswered_lines_only(tmp_path):
    lines = [request(i) for i in range(6)]
    with BatchServer(outcomes=["expired"]) as server:
        results = run(lines, tmp_path, client_for(server), progress=False)
        first, second = (server.request_lines(b["input_file_id"]) for b in server.batches.values())
    assert [line["custom_id"] for line in first] == [line["custom_id"] for line in lines]
    assert second == lines[3:]  # the first half was answered before the batch expired
    assert sorted(results) == [line["custom_id"] for line in lines] and all("body" in r for r in results.values())


def test_failed_lines_come_back_as_errors_and_the_next_round_asks_only_for_them(tmp_path):
    lines = [request(i) for i in range(4)]
    with BatchServer(outcomes=["failed_lines"]) as server:
        client = client_for(server)
        results = run(lines, tmp_path, client, progress=False)
        assert server.created == 1  # an error is the caller's to retry, not resubmitted within the round
        failed = sorted(cid for cid, r in results.items() if "error" in r)
        assert failed == ["req-001", "req-003"]
        assert results["req-001"]["error"] == {"code": "mock_invalid", "message": "invalid request (mock)",
                                               "status_code": 400}
        again = run(lines, tmp_path, client, progress=False)  # the caller's next round: the same four lines
        assert server.created == 2
        resent = server.request_lines(list(server.batches.values())[-1]["input_file_id"])
    assert [line["custom_id"] for line in resent] == failed  # answers are never paid for twice
    assert all("body" in r for r in again.values()) and (tmp_path / "round-0002" / "requests-1.jsonl").exists()


def test_a_cancelled_batch_is_resubmitted_at_most_three_times(tmp_path):
    lines = [request(i) for i in range(8)]
    with BatchServer(outcomes=["cancelled"] * 3) as server:
        results = run(lines, tmp_path, client_for(server), progress=False)
        sizes = [len(server.request_lines(b["input_file_id"])) for b in server.batches.values()]
        assert [b["status"] for b in server.batches.values()] == ["cancelled"] * 3
    assert sizes == [8, 4, 2]  # each time only the lines it did not run
    assert sorted(results) == [f"req-{i:03d}" for i in range(7)]  # one line never ran: absent, not an error


def test_a_batch_that_fails_validation_fails_every_line(tmp_path):
    lines = [request(i) for i in range(3)]
    with BatchServer(outcomes=["failed"]) as server:
        results = run(lines, tmp_path, client_for(server), progress=False)
        assert server.created == 1
    assert results["req-000"] == {"error": {"code": "invalid_request",
                                            "message": "line 1 is not a valid request (mock)"}}
    assert results["req-002"]["error"]["code"] == "batch_failed"


class Killed(BaseException):
    """Stands for the process being killed: nothing below catches it."""


class KilledAt:
    """The ``openai`` client, but the process dies at ``where`` ("poll": the first retrieval; "create": just after
    the server accepted the batch, before its id reached us)."""

    def __init__(self, client: openai.OpenAI, where: str):
        self.files, self._batches, self.where = client.files, client.batches, where
        self.batches, self._client, self.max_retries = self, client, client.max_retries

    def with_options(self, **options):
        return KilledAt(self._client.with_options(**options), self.where)

    def create(self, **params):
        batch = self._batches.create(**params)
        if self.where == "create":
            raise Killed
        return batch

    def retrieve(self, batch_id):
        if self.where == "poll":
            raise Killed
        return self._batches.retrieve(batch_id)

    def list(self, **params):
        return self._batches.list(**params)


@pytest.mark.parametrize("where", ["poll", "create"])
def test_a_killed_round_resumes_without_uploading_or_starting_anything_again(tmp_path, where):
    lines = [request(i) for i in range(4)]
    with BatchServer() as server:
        client = client_for(server)
        with pytest.raises(Killed):
            run(lines, tmp_path, KilledAt(client, where), progress=False)
        assert (server.uploads, server.created) == (1, 1)
        others = 150 if where == "create" else 0  # batches started since: ours is past the listing's first page
        for _ in range(others):
            server.create("file-other", ENDPOINT, "24h")
        # the same command again, under a budget: the batch found running is held and booked like one started here
        results = run(lines, tmp_path, client, progress=False, budget=Budget(1.0))
        assert (server.uploads, server.created) == (1, 1 + others)
    assert sorted(results) == [line["custom_id"] for line in lines] and all("body" in r for r in results.values())


KILLED_CHILD = """
import json, sys
from pathlib import Path
import openai
from rpa_lib.llm.batches import run_round
client = openai.OpenAI(base_url=sys.argv[1], api_key="sk-test", max_retries=0)
run_round(json.loads(sys.argv[3]), mode="openai", folder=Path(sys.argv[2]), client=client, poll_seconds=0.02)
"""


def test_a_process_killed_while_it_polls_is_resumed_by_the_next(tmp_path):
    lines = [request(i) for i in range(3)]
    with BatchServer() as server:
        server.paused = True  # the batch stays in progress while the child polls it
        child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, server.base_url, str(tmp_path), json.dumps(lines)],
                                 env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 60
            while server.retrievals < 2 and child.poll() is None and time.time() < deadline:
                time.sleep(FAST)
            assert server.retrievals >= 2, child.stderr.read().decode() if child.poll() is not None else "no poll"
        finally:
            child.kill()  # SIGKILL: no handler, no cleanup
            child.wait()
        server.paused = False
        results = run(lines, tmp_path, client_for(server), progress=False)
        assert (server.uploads, server.created) == (1, 1)
    assert sorted(results) == [line["custom_id"] for line in lines] and all("body" in r for r in results.values())


def test_request_files_stay_within_the_limits(tmp_path):
    lines = [request(i) for i in range(5)]
    assert [len(f) for f in split_lines(lines, Limits(requests=2))] == [2, 2, 1]
    size = len(jsonl(lines[0]).encode())
    assert [len(f) for f in split_lines(lines, Limits(bytes=3 * size + 2))] == [3, 2]  # all lines are one size
    with pytest.raises(ValueError, match="req-000.*alone is"):
        split_lines(lines, Limits(bytes=size - 1))
    with BatchServer() as server:
        results = run(lines, tmp_path, client_for(server), progress=False, limits=Limits(requests=2))
        assert [len(server.request_lines(b["input_file_id"])) for b in server.batches.values()] == [2, 2, 1]
    assert len(results) == 5


def test_a_summary_prices_the_answers_at_batch_rates(tmp_path):
    lines = [request(i, model="gpt-4.1") for i in range(3)]
    with BatchServer() as server:
        results = run(lines, tmp_path, client_for(server), progress=False)
    prompt = sum(r["body"]["usage"]["prompt_tokens"] for r in results.values())
    completion = sum(r["body"]["usage"]["completion_tokens"] for r in results.values())
    spent = summary(tmp_path)
    assert batch_price(Price(2.0, 8.0)) == Price(1.0, 4.0)
    assert spent["rounds"][0]["batches"] == ["batch_2"] and spent["calls"] == spent["answered"] == 3
    assert (spent["prompt_tokens"], spent["completion_tokens"]) == (prompt, completion)
    assert spent["usd"] == pytest.approx((prompt * 1.0 + completion * 4.0) / 1e6)


def engine(folder, n: int, *, fail: str | None = None) -> None:
    """What ``vllm run-batch`` does with a request file: one output line per request (``fail``: an error line)."""
    out = []
    for line in map(json.loads, (folder / f"requests-{n}.jsonl").read_text().splitlines()):
        if line["custom_id"] == fail:
            out.append({"id": "x", "custom_id": line["custom_id"], "error": "prompt too long (engine)",
                        "response": {"status_code": 400, "request_id": "x", "body": None}})
        else:
            body = chat_completion(line["body"], default_answer, 1)
            out.append({"id": "x", "custom_id": line["custom_id"], "error": None,
                        "response": {"status_code": 200, "request_id": "x", "body": body}})
    text = "".join(json.dumps(o) + "\n" for o in out)
    (folder / f"results-{n}.jsonl").write_text(text[: len(text) // 2])  # a file still being copied
    time.sleep(5 * FAST)
    (folder / f"results-{n}.jsonl").write_text(text)


def test_files_mode_waits_for_result_files_and_reads_them(tmp_path, capsys):
    lines = [request(i) for i in range(3)]
    results: dict = {}
    worker = threading.Thread(target=lambda: results.update(
        run_round(lines, mode="files", folder=tmp_path, poll_seconds=FAST)))
    worker.start()
    folder = tmp_path / "round-0001"
    for _ in range(500):
        if (folder / "requests-1.jsonl").exists():
            break
        time.sleep(FAST)
    engine(folder, 1, fail="req-002")
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert text(results["req-000"]) == f"echo: {lines[0]['body']['messages'][0]['content']}"
    assert results["req-002"] == {"error": {"message": "prompt too long (engine)", "status_code": 400}}
    said = capsys.readouterr().err
    assert "vllm run-batch -i requests-1.jsonl -o results-1.jsonl --model gpt-4.1-mini" in said
    assert "round 1 results-1.jsonl: 3/3 lines" in said
    again = run_round(lines[:2], mode="files", folder=tmp_path, poll_seconds=FAST, progress=False)
    assert again == {cid: results[cid] for cid in ("req-000", "req-001")}  # answered before: no new file
    assert not (tmp_path / "round-0002").exists()
    assert [(r["round"], r["mode"], r["calls"], r["answered"], r["failed"], r["usd"]) for r in summary(tmp_path)["rounds"]] \
        == [(1, "files", 3, 2, 1, None)]


def test_parse_results_reads_answers_errors_and_lines_never_run():
    out = parse_results(
        '{"custom_id": "a", "response": {"status_code": 200, "body": {"choices": []}}, "error": null}\n'
        '{"custom_id": "b", "response": null, "error": {"code": "batch_expired", "message": "late"}}\n'
        '{"custom_id": "c", "response": {"status_code": 429, "body": {"error": {"message": "slow down"}}}}\n')
    assert out == {"a": {"status_code": 200, "body": {"choices": []}}, "b": None,
                   "c": {"error": {"message": "slow down", "status_code": 429}}}
    with pytest.raises(ValueError):
        parse_results('{"custom_id": "a", "resp')


def test_the_budget_holds_a_batch_before_it_starts_and_books_it_at_batch_price(tmp_path):
    lines = [request(i, model="gpt-4.1") for i in range(3)]
    with BatchServer() as server:
        client = client_for(server)
        with pytest.raises(BudgetExceeded, match=r"round 1: budget of \$0.0005 reached.*batch 1 of 3 requests may"):
            run(lines, tmp_path, client, progress=False, budget=Budget(0.0005, tmp_path / "small.json"))
        assert server.created == 0  # stopped before anything was paid for
        budget = Budget(1.0, tmp_path / "budget.json")
        with pytest.raises(Killed):
            run(lines[:1], tmp_path / "killed", KilledAt(client, "poll"), progress=False, budget=budget)
        run(lines[:1], tmp_path / "killed", client, progress=False, budget=budget)  # booked after the restart
        run(lines, tmp_path, client, progress=False, budget=budget)
    paid = summary(tmp_path)["usd"] + summary(tmp_path / "killed")["usd"]
    state = json.loads((tmp_path / "budget.json").read_text())
    assert state["spent"] == pytest.approx(paid) and state["calls"] == 4 and paid > 0
    with pytest.raises(LLMFatalError, match="'qwen3-32b' is unknown"):
        run([request(0, model="qwen3-32b")], tmp_path, client, budget=budget)


def test_without_a_client_it_builds_the_backends_and_never_stores_the_key(tmp_path, monkeypatch):
    key = "sk-batch-secret-0123456789"
    with BatchServer() as server:
        monkeypatch.setenv("RPA_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        results = run_round([request(0)], mode="openai", folder=tmp_path, poll_seconds=FAST, progress=False)
        assert server.created == 1 and server.authorizations == {f"Bearer {key}"}
    assert text(results["req-000"]).startswith("echo: ")
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def test_a_round_stopped_and_run_again_in_the_same_process_holds_its_running_batch_once(tmp_path):
    lines = [request(0, model="gpt-4.1", max_tokens=50_000)]  # about $0.20 at batch price
    budget = Budget(0.35, tmp_path / "budget.json")
    with BatchServer() as server:
        client = client_for(server)
        with pytest.raises(Killed):  # an interrupt or a transport fault while its batch runs; the session goes on
            run(lines, tmp_path, KilledAt(client, "poll"), progress=False, budget=budget)
        with pytest.raises(BudgetExceeded):  # the batch still runs, and will be paid for: its hold stays
            budget.hold(0.2, "the next call")
        run(lines, tmp_path, client, progress=False, budget=budget)  # resumed: its hold taken over, then booked
        assert server.created == 1
    budget.settle(budget.hold(0.2, "the next call"), None)  # the collected batch holds nothing any more
    assert json.loads((tmp_path / "budget.json").read_text())["held"] == {}


def test_a_restarted_round_counts_the_batches_already_running_before_it_starts_another(tmp_path):
    lines = [request(i, model="gpt-4.1", max_tokens=50_000) for i in range(2)]  # about $0.20 each at batch price
    with BatchServer() as server:
        client = client_for(server)
        for _ in range(2):  # the first run starts part 1 and is stopped at part 2; so is the same command again
            budget = Budget(0.35, tmp_path / "budget.json")  # a new process: it holds nothing
            with pytest.raises(BudgetExceeded, match="batch 2 of 1 requests"):
                run(lines, tmp_path, client, progress=False, limits=Limits(requests=1), budget=budget)
            assert server.created == 1
        results = run(lines, tmp_path, client, progress=False, limits=Limits(requests=1),
                      budget=Budget(0.5, tmp_path / "budget.json"))
        assert server.created == 2 and sorted(results) == ["req-000", "req-001"]
    assert json.loads((tmp_path / "budget.json").read_text())["spent"] == pytest.approx(summary(tmp_path)["usd"])


def test_a_batch_whose_creation_reply_was_lost_is_found_not_created_again(tmp_path):
    with BatchServer(create_faults=["lost", "refused"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=2)
        client.retry_policy = RetryPolicy(base_delay=FAST)  # as the backend's client has; no wait for a test
        # the first batch is created but its reply lost: found by its input file, not created twice
        results = run([request(0)], tmp_path, client, progress=False)
        assert server.created == 1 and "body" in results["req-000"]
        # the next is refused outright (nothing created, nothing found): created at the next try
        results = run([request(1)], tmp_path, client, progress=False)
        assert server.created == 2 and "body" in results["req-001"]


def test_a_batch_is_looked_for_among_those_created_since_its_part_not_the_whole_history(tmp_path):
    """A part uploaded but never started (killed before its create) is looked for on resume: the listing stops at
    the first batch older than the part, not after every page of the account's batches."""
    from rpa_lib.llm.batch_ledger import Part
    from rpa_lib.llm.batches import CLOCK_SKEW, _find

    with BatchServer() as server:
        for _ in range(250):  # an account's old batches
            server.create("file-old", ENDPOINT, "24h")
        for batch in server.batches.values():
            batch["created_at"] -= 2 * CLOCK_SKEW
        client = client_for(server)
        part = Part(1, 1, ["a"], file_id="file-ours", created=time.time())
        assert _find(client, part) is None and server.listings == 1
        ours = server.create("file-ours", ENDPOINT, "24h")
        server.create("file-newer", ENDPOINT, "24h")["created_at"] = None  # a server that leaves it out: read on
        assert _find(client, part).id == ours["id"]


def test_a_kill_between_the_ledgers_part_and_its_request_file_is_resumed(tmp_path, monkeypatch):
    lines = [request(i) for i in range(3)]
    write = Path.write_text

    def killed(path, *args, **kwargs):
        if "requests-" in path.name:  # the request file's temporary copy, written whole then renamed
            raise Killed
        return write(path, *args, **kwargs)

    with BatchServer() as server:
        client = client_for(server)
        monkeypatch.setattr(Path, "write_text", killed)
        with pytest.raises(Killed):
            run(lines, tmp_path, client, progress=False)
        monkeypatch.setattr(Path, "write_text", write)
        assert not list(tmp_path.rglob("*requests-*"))  # nothing half written
        results = run(lines, tmp_path, client, progress=False)  # the part is in the ledger, its file written now
        assert (server.uploads, server.created) == (1, 1)
    assert sorted(results) == [line["custom_id"] for line in lines] and all("body" in r for r in results.values())


def test_a_batch_is_booked_before_it_is_marked_collected(tmp_path, monkeypatch):
    """A kill between the two leaves the cost booked (booked again by the restart, an over-count), never unbooked."""
    from rpa_lib.llm.batch_ledger import Ledger

    lines = [request(i, model="gpt-4.1") for i in range(3)]
    collect = Ledger.collect

    def killed(*args, **kwargs):
        raise Killed

    with BatchServer() as server:
        client = client_for(server)
        monkeypatch.setattr(Ledger, "collect", killed)
        with pytest.raises(Killed):
            run(lines, tmp_path, client, progress=False, budget=Budget(1.0, tmp_path / "budget.json"))
        monkeypatch.setattr(Ledger, "collect", collect)
        paid = json.loads((tmp_path / "budget.json").read_text())["spent"]
        run(lines, tmp_path, client, progress=False, budget=Budget(1.0, tmp_path / "budget.json"))
        assert server.created == 1
    assert paid == pytest.approx(summary(tmp_path)["usd"]) and paid > 0


def test_a_batch_servers_error_never_shows_the_key(tmp_path):
    key = "sk-batch-secret-0123456789"
    with BatchServer(api_key="sk-the-right-one") as server:  # refuses the key, echoing it back
        client = openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)
        with pytest.raises(LLMFatalError, match=r"401.*Incorrect API key provided: Bearer \*\*\*.*run again to "
                                                r"resume") as caught:
            run([request(0)], tmp_path, client, progress=False)
    assert key not in str(caught.value) and caught.value.__cause__ is None and caught.value.__context__ is None


def test_the_batch_server_from_its_command_line_runs_a_scripted_batch():
    """``python -m benchmarks.batch_server --outcomes expired`` (docs/batch.md's dry run): the first line names the
    URL, the first batch expires with half its lines answered."""
    server = subprocess.Popen([sys.executable, "-m", "benchmarks.batch_server", "--port", "0", "--outcomes", "expired"],
                              stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split(" at ")[1].split(" ")[0]
        client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
        lines = [{"custom_id": f"c{i}", "method": "POST", "url": ENDPOINT,
                  "body": {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}} for i in range(4)]
        uploaded = client.files.create(file=("r.jsonl", "".join(map(jsonl, lines)).encode()), purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h")
        while batch.status not in ("completed", "expired", "failed", "cancelled"):
            batch = client.batches.retrieve(batch.id)
        assert (batch.status, batch.request_counts.completed) == ("expired", 2)
    finally:
        server.terminate()
        server.wait(timeout=10)
