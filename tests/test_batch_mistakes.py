"""Batch rounds met with the mistakes and accidents of a real run: a results file that is cut, repeats or foreign
lines, or holds an error body; a server without a Batch API; a corrupt ledger; a batch folder that is a file; two
runs on one batch folder; a run stopped while its batches ran, then started for other requests."""

from __future__ import annotations

import json
import threading
import time

import openai
import pytest

from benchmarks.batch_server import BatchServer
from benchmarks.mock_server import MockServer, chat_completion, default_answer
from rpa_lib.llm import LLMFatalError
from rpa_lib.llm.batch_ledger import Ledger
from rpa_lib.llm.batches import parse_results, run_round
from rpa_lib.run import reproduce

FAST = 0.01  # seconds between polls


def request(i: int) -> dict:
    return {"custom_id": f"req-{i:03d}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": f"Question {i}?"}],
                     "max_tokens": 16}}


def answer(line: dict) -> str:
    return json.dumps({"id": "x", "custom_id": line["custom_id"], "error": None, "response": {
        "status_code": 200, "body": chat_completion(line["body"], default_answer, 1)}}) + "\n"


def files_round(folder, lines, results_text=None, **options):
    """``run_round`` in files mode, with ``results-1.jsonl`` of round 1 written beforehand, that ends within 5 s."""
    if results_text is not None:
        (folder / "round-0001").mkdir(parents=True)
        (folder / "round-0001" / "results-1.jsonl").write_text(results_text)
    out: dict = {}

    def answer_round() -> None:
        try:
            out["results"] = run_round(lines, mode="files", folder=folder, poll_seconds=FAST, progress=False,
                                       **options)
        except Exception as exc:
            out["error"] = exc

    worker = threading.Thread(target=answer_round, daemon=True)  # a regression waits for ever: fail instead
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "still waiting for the results file"
    if "error" in out:
        raise out["error"]
    return out["results"]


@pytest.mark.parametrize("extra, says", [
    ('{"custom_id": "req-000", "error": {"message": "again"}, "response": null}\n',
     "results-1.jsonl line 4: custom_id 'req-000' again"),
    (json.dumps(request(3)) + "\n",
     "results-1.jsonl line 4: neither a response nor an error (a request line, not its result?)"),
    ("[1, 2]\n", "results-1.jsonl line 4: no custom_id"),
    ('{"custom_id": "req-009", "response": [1]}\n', "results-1.jsonl line 4: response is list, not an object"),
    ('{"custom_id": "req-009", "response": {"status_code": "OK", "body": {}}}\n',
     "line 4: response.status_code 'OK' is not a number"),
    ('{"custom_id": "zzz", "response": {"status_code": 200, "body": {"choices": []}}}\n',
     "1 line(s) answer requests that requests-1.jsonl does not hold (custom_id 'zzz')"),
    ("not json\n", "results-1.jsonl line 4: not a JSON line"),
])
def test_a_results_file_with_a_bad_line_is_one_error_naming_the_file_and_line(tmp_path, extra, says):
    lines = [request(i) for i in range(3)]
    with pytest.raises(LLMFatalError, match="results-1.jsonl") as caught:
        files_round(tmp_path, lines, "".join(map(answer, lines)) + extra)
    assert says in str(caught.value) and str(tmp_path) in str(caught.value)


def test_the_results_of_another_file_are_refused_not_waited_for(tmp_path):
    lines = [request(i) for i in range(3)]
    others = [{**line, "custom_id": line["custom_id"] + "-old"} for line in lines]
    with pytest.raises(LLMFatalError, match="3 line.s. answer requests that requests-1.jsonl does not hold"):
        files_round(tmp_path, lines, "".join(map(answer, others)))


def test_a_status_200_with_an_error_body_is_an_error_not_an_answer():
    out = parse_results('{"custom_id": "a", "response": {"status_code": 200, "body": {"error": {"message": '
                        '"model not loaded"}}}, "error": null}\n'
                        '{"custom_id": "b", "response": {"status_code": 200, "body": {"object": "x"}}}\n')
    assert out == {"a": {"error": {"message": "model not loaded", "status_code": 200}},
                   "b": {"error": {"message": "HTTP 200 without a completion", "status_code": 200}}}


def test_a_results_file_being_copied_counts_its_complete_lines(tmp_path, capsys):
    lines = [request(i) for i in range(3)]
    text = "".join(map(answer, lines))
    results: dict = {}
    worker = threading.Thread(target=lambda: results.update(run_round(
        lines, mode="files", folder=tmp_path, poll_seconds=FAST)))
    (tmp_path / "round-0001").mkdir()
    (tmp_path / "round-0001" / "results-1.jsonl").write_text(text[:-20])  # the last line still on its way
    worker.start()
    time.sleep(10 * FAST)
    (tmp_path / "round-0001" / "results-1.jsonl").write_text(text)
    worker.join(timeout=10)
    assert not worker.is_alive() and sorted(results) == ["req-000", "req-001", "req-002"]
    assert "results-1.jsonl: 2/3 lines" in capsys.readouterr().err


def test_a_second_run_on_the_same_batch_folder_stops_instead_of_submitting_again(tmp_path):
    lines = [request(i) for i in range(2)]
    first: dict = {}
    worker = threading.Thread(target=lambda: first.update(run_round(
        lines, mode="files", folder=tmp_path, poll_seconds=FAST, progress=False)), daemon=True)
    worker.start()
    for _ in range(500):
        if (tmp_path / "round-0001" / "requests-1.jsonl").exists():
            break
        time.sleep(FAST)
    second: dict = {}

    def again() -> None:
        try:
            files_round(tmp_path, lines)
        except LLMFatalError as exc:
            second["error"] = str(exc)

    other = threading.Thread(target=again, daemon=True)
    other.start()
    other.join(timeout=6)
    (tmp_path / "round-0001" / "results-1.jsonl").write_text("".join(map(answer, lines)))
    worker.join(timeout=10)
    assert not other.is_alive(), "the second run waited on the first one's round"
    assert "another run (process " in second["error"] and "paid twice" in second["error"]
    assert sorted(first) == ["req-000", "req-001"] and len(list(tmp_path.glob("round-*/requests-*.jsonl"))) == 1


def test_a_ledger_that_cannot_be_opened_is_not_called_corrupt(tmp_path):
    """Not openable (here a folder where the file belongs; also a lock held for minutes): named, without the advice
    to move a damaged ledger aside, which would submit its batches again."""
    (tmp_path / "ledger.sqlite").mkdir()
    with pytest.raises(LLMFatalError, match=r"ledger.sqlite: cannot open the batch ledger \(unable to open") as err:
        Ledger(tmp_path)
    assert "move it aside" not in str(err.value)


def test_a_corrupt_ledger_is_one_error_naming_it(tmp_path):
    (tmp_path / "ledger.sqlite").write_bytes(b"not a database, " * 64)
    with pytest.raises(LLMFatalError, match=r"ledger.sqlite: cannot read the batch ledger \(file is not a database\)"):
        files_round(tmp_path, [request(0)])


def test_a_server_without_a_batch_api_says_so_and_names_files_mode(tmp_path):
    with MockServer() as server:  # chat completions only, as vLLM or llama.cpp's server
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        with pytest.raises(LLMFatalError) as caught:
            run_round([request(0)], mode="openai", folder=tmp_path, client=client, progress=False)
    assert f"the server at {server.base_url} has no Batch API" in str(caught.value)
    assert "use --batch files" in str(caught.value)


def test_a_batch_started_by_a_stopped_run_is_collected_by_a_run_asking_for_other_requests_too(tmp_path):
    """A run stops while its batch runs; the next asks for those requests and more (another --only, a changed
    setting): the running batch is collected, its requests are not submitted again."""
    lines = [request(i) for i in range(4)]
    with BatchServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        assert _stopped_while_polling(lines[:2], tmp_path, client) and server.created == 1
        results = run_round(lines, mode="openai", folder=tmp_path, client=client, poll_seconds=FAST, progress=False)
        assert server.created == 2  # the running batch, and one for req-002 and req-003 only
        second = list(server.batches.values())[-1]
        assert [line["custom_id"] for line in server.request_lines(second["input_file_id"])] == ["req-002", "req-003"]
    assert sorted(results) == [line["custom_id"] for line in lines] and all("body" in r for r in results.values())


class _Stop(BaseException):
    """Stands for Ctrl-C while a run polls its batch."""


def _stopped_while_polling(lines, folder, client) -> bool:
    """Run a round until its first poll, then stop it as Ctrl-C would."""

    class Polls:
        def __init__(self):
            self.files, self.batches = client.files, self

        def with_options(self, **options):
            return client.with_options(**options)

        max_retries = client.max_retries

        def create(self, **params):
            return client.batches.create(**params)

        def retrieve(self, batch_id):
            raise _Stop

        def list(self, **params):
            return client.batches.list(**params)

    try:
        run_round(lines, mode="openai", folder=folder, client=Polls(), poll_seconds=FAST, progress=False)
    except _Stop:
        return True
    return False


def test_a_transport_failure_in_reproduce_is_one_line(monkeypatch):
    def no_key(*args, **kwargs):
        raise LLMFatalError("no OpenAI API key for model 'gpt-4.1' at https://api.openai.com/v1: set OPENAI_API_KEY")

    monkeypatch.setattr(reproduce, "run_rounds", no_key)
    with pytest.raises(SystemExit, match="^no OpenAI API key for model 'gpt-4.1' at https://api.openai.com/v1: set"):
        reproduce.batch_rounds({}, {}, "openai", {}, None)


def test_a_batch_folder_that_is_a_file_is_one_line_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("RPA_CACHE_DIR", str(tmp_path))
    (tmp_path / "batch").write_text("not a folder")
    monkeypatch.setattr(reproduce, "run_rounds", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(SystemExit, match=f"batch folder {tmp_path / 'batch'}: cannot write there .* is not a folder"):
        reproduce.batch_rounds({}, {}, "files", {}, None)
