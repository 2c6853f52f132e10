"""A real OpenAI-compatible server: llama.cpp's (``python -m llama_cpp.server``, package ``llama-cpp-python[server]``,
installed by ``make setup-server``) on 127.0.0.1 with the embedded SmolLM2-135M (its GGUF stored as Q8_0), driven
only through our public API: chat, choose and structured in each mode, 16 concurrent calls, token counts, a budget's
holds and ledger, a wrong model name, the server stopped mid-run and a resumed run, two replicas behind one base URL
(one stopped mid-run), and notebooks 03 and 05 configured only by ``RPA_LLM_BASE_URL`` and ``RPA_LLM_MODEL``.
Skipped when the package is not installed (``make setup-server`` installs it; CI does).

What llama.cpp's server (0.3.36) answers here: it rejects ``response_format`` ``json_schema`` with a 500 validation
error, accepts ``json_object`` with or without a ``schema`` (with one, grammar-constrained), and gives ``logprobs``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed: make setup-server")

from benchmarks import cpu_probe  # noqa: E402
from rpa_lib.llm import (  # noqa: E402
    Budget,
    BudgetExceeded,
    LLMError,
    LLMFatalError,
    RetryPolicy,
    clear_caches,
    get_llm,
)
from rpa_lib.llm.local import smollm2_path  # noqa: E402
from rpa_lib.llm.plan import acting  # noqa: E402

MODEL = "smollm2"  # the alias the server serves the GGUF under
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
QUICK = RetryPolicy(attempts=2, base_delay=0.1, max_delay=0.1)
# A generous request timeout: on a loaded 2-core machine one completion of the 135M model can take over a minute, and
# a timed-out request is retried; the tests below assert no retries (capability rejections are not retried), which a
# short timeout would break for slowness alone. Timeouts are tested in test_llm_timeout.py.
TIMEOUT = 300


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m llama_cpp.server`` serving ``model`` on a free port, started and stopped by the test."""

    def __init__(self, model: Path) -> None:
        self.model, self.port, self.proc = model, free_port(), None
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Server:
        # A 768-token context holds every request here (the longest prompt is 465 tokens, the longest reply 40). The
        # server turns the logits of the whole context into log-probabilities for each logprobs request: 0.85 s with
        # 1024 tokens, 0.48 s with 512 (SmolLM2's 49,152-token vocabulary, one core). One thread for the prompt as for
        # the reply: the other core runs the other pytest worker, and a second llama.cpp thread waiting for it spins.
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", MODEL,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "768", "--n_threads", "1",
                   "--n_threads_batch", "1"]
        self.log = tempfile.TemporaryFile(mode="w+")  # llama.cpp logs hundreds of KB: a pipe would fill and block it
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"llama_cpp.server exited: {self.log.read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama_cpp.server did not answer within 60 s")

    def completions(self) -> int:
        """Chat-completion requests answered so far, counted in the server's access log (read without moving the
        offset the server writes at)."""
        fd = self.log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace").count('"POST /v1/chat/completions ')

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def served_model(tmp_path_factory):
    """The package's SmolLM2 (Q4_1) stored as Q8_0, which llama.cpp reads 1.4 times as fast on this machine (145
    prompt tokens a second on one core instead of 103-107: ``python -m benchmarks cpu_probe``); the tests' prompts
    are most of the server's time."""
    model = cpu_probe.requantized(smollm2_path(), tmp_path_factory.mktemp("gguf") / "SmolLM2-135M-Instruct.Q8_0.gguf")
    yield model
    model.unlink()  # 145 MB: not kept with the test folders of the last runs


@pytest.fixture(scope="module")
def server(served_model):
    running = Server(served_model).start()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def _negotiate_afresh():
    clear_caches()


def llm(server: Server, **options):
    return get_llm(f"openai:{MODEL}", base_url=server.base_url, **{"cache": False, "timeout": TIMEOUT, **options})


def test_chat_and_token_counts(server):
    model = llm(server)
    reply = model.chat(user("Say hello."), max_tokens=4)
    assert reply.text.strip() and reply.prompt_tokens > 5 and 0 < reply.completion_tokens <= 4
    usage = model.usage.to_dict()
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (reply.prompt_tokens, reply.completion_tokens)
    assert usage["requests"] == 1 and usage["retries"] == 0


def test_choose_in_each_mode(server):
    question = user("Is the sky blue on a clear day?")
    auto = llm(server)
    assert auto.choose(question, ["yes", "no"]).text in ("yes", "no")
    assert auto.usage.to_dict()["modes"] == {"choose": "logprobs"}  # json_schema rejected once, then logprobs
    assert auto.usage.retries == 0 and auto.usage.requests == 1
    scored = llm(server, choose_mode="logprobs").choose(question, ["yes", "no"])
    assert scored.scores and set(scored.scores) == {"yes", "no"}
    text = llm(server, choose_mode="text")
    try:  # the 135M model may not name an option in free text: a clean LLMError after the re-asks, never a fault
        assert text.choose(question, ["yes", "no"]).text in ("yes", "no")
    except LLMError as e:
        assert "no allowed answer" in str(e)
    start = time.monotonic()
    with pytest.raises(LLMFatalError, match="does not support choose_mode 'json_schema'"):
        llm(server, choose_mode="json_schema").choose(question, ["yes", "no"])
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("mode", ["auto", "json_object_schema", "json_object", "text"])
def test_structured_in_each_mode(server, mode):
    model = llm(server, structured_mode=mode)
    ask = user("Describe Ada, a 36-year-old engineer, as a JSON object.")
    if mode in ("auto", "json_object_schema"):  # grammar-constrained: always a valid object
        assert set(model.structured(ask, SCHEMA, max_tokens=40).data) >= {"name", "age"}
        assert model.usage.to_dict()["modes"] == {"structured": "json_object_schema"}
    else:  # unconstrained by the schema: valid, or a clean LLMError after the re-asks
        try:
            assert set(model.structured(ask, SCHEMA, max_tokens=40).data) >= {"name", "age"}
        except LLMError as e:
            assert "no valid JSON object" in str(e)
    assert model.usage.retries == 0


def test_sixteen_concurrent_calls(server):
    model = llm(server, max_workers=16)
    outcomes = model.map(lambda i: model.chat(user(f"Count to {i}."), max_tokens=4), range(16), progress=False)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    assert model.usage.requests == 16 and model.usage.completion_tokens > 0


def test_a_budget_books_what_the_server_counts_and_never_passes_its_limit(server, monkeypatch):
    """Structured calls under ``auto`` (json_schema rejected, then the longer json_object_schema body) and choices,
    8 in flight: the hold covers each attempt, the rejected attempt books nothing, the ledger equals the server's
    token counts at the price, and a limit a few calls deep stops the run at or under it."""
    monkeypatch.setenv("RPA_PRICE_IN", "2")
    monkeypatch.setenv("RPA_PRICE_OUT", "8")
    budget = Budget(1.0)
    model = llm(server, max_workers=8).with_budget(budget)
    asks = [user(f"Describe person number {i} as a JSON object.") for i in range(4)]
    model.map(lambda m: model.structured(m, SCHEMA, max_tokens=24), asks, progress=False)
    model.map(lambda i: model.choose(user(f"Is {i} even?"), ["yes", "no"]), range(4), progress=False)
    usage = model.usage
    assert usage.requests == 8 and budget.spent == pytest.approx(model.price.cost(usage.prompt_tokens,
                                                                                  usage.completion_tokens))
    small = Budget(3.5 * budget.spent / 8)  # room for about three calls at their real cost, fewer at their holds
    tight = llm(server, max_workers=8).with_budget(small)
    with pytest.raises(BudgetExceeded):
        tight.map(lambda i: tight.choose(user(f"Is {i} odd?"), ["yes", "no"]), range(8), progress=False)
    assert 0 <= small.spent <= small.limit


def test_a_wrong_model_name_is_a_clear_error_at_once(server):
    start = time.monotonic()
    with pytest.raises(LLMError, match="no-such-model") as err:
        get_llm("openai:no-such-model", base_url=server.base_url, cache=False).chat(user("hi"), max_tokens=4)
    assert time.monotonic() - start < 5, str(err.value)


def test_server_stopped_mid_run_then_a_resumed_run_repeats_no_completed_call(served_model, tmp_path):
    own = Server(served_model).start()
    cache = tmp_path / "llm.sqlite"
    items = [f"Name a colour, {i}." for i in range(6)]
    try:
        model = get_llm(f"openai:{MODEL}", base_url=own.base_url, cache=cache, timeout=TIMEOUT, retry=QUICK, max_workers=1)
        stopped: list[float] = []

        def ask(item: str) -> str:
            if item == items[3]:
                own.stop()  # the server goes away after three completed calls
                stopped.append(time.monotonic())
            return model.chat(user(item), max_tokens=4).text

        outcomes = model.map(ask, items, progress=False)
        took = time.monotonic() - stopped[0]
        assert [o.ok for o in outcomes] == [True] * 3 + [False] * 3, [o.error for o in outcomes]
        assert "connection failed" in outcomes[3].error and took < 10  # refused at once: 2 attempts and a backoff
        # the same port again, a resumed run: the three completed calls come from the cache
        again = Server(served_model)
        again.port, again.base_url = own.port, own.base_url
        own = again.start()
        resumed = get_llm(f"openai:{MODEL}", base_url=own.base_url, cache=cache, timeout=TIMEOUT, max_workers=1)
        assert all(o.ok for o in resumed.map(lambda q: resumed.chat(user(q), max_tokens=4).text, items, progress=False))
        assert resumed.usage.cache_hits == 3 and resumed.usage.requests == 3
    finally:
        own.stop()


def test_two_replicas_share_the_calls_and_one_stopped_mid_run_leaves_the_other(server, caplog):
    """Two servers behind one base URL: a character's calls all reach one, calls for no one alternate, and when one
    stops the other answers the rest, with one log line."""
    other = Server(server.model).start()
    try:
        model = get_llm(f"openai:{MODEL}", base_url=f"{server.base_url},{other.base_url}", cache=False,
                        timeout=TIMEOUT, retry=QUICK, max_workers=1)

        def counts() -> tuple[int, int]:
            return server.completions(), other.completions()

        start = counts()
        with acting("ada-lindqvist"):
            assert all(model.chat(user(f"Say {i}."), max_tokens=2).text for i in range(3))
        sticky = counts()
        assert sorted(b - a for a, b in zip(start, sticky)) == [0, 3]
        assert all(model.chat(user(f"Name {i}."), max_tokens=2).text for i in range(4))
        assert [b - a for a, b in zip(sticky, counts())] == [2, 2]
        other.stop()
        before = server.completions()
        with caplog.at_level("WARNING", logger="rpa_lib.llm"):
            assert all(model.chat(user(f"Count {i}."), max_tokens=2).text for i in range(4))
        assert server.completions() - before == 4
        assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
            f"replica {other.base_url} refuses connections"]
    finally:
        other.stop()


# The least that runs both notebooks end to end against the server: one character, one QA question, the MBTI subset's
# minimum (one item per dimension), a Guided Selection walk of one chunk, and AMADEUS alone, whose Attribute Extractor
# (extract_format json, the default) makes structured calls, Guided Selection choose calls and the reply a chat call;
# the judge's calls come on top. The server reads about 145 prompt tokens a second on one core: each call counts.
TINY = """description: notebooks 03 and 05 against a served model, fixture data, hashing embedder, fewest items
defaults:
  data_dir: {data}
  embedder: hash-64
notebooks:
  03_chunk_usage:
    characters: [ada-lindqvist]
    qa_questions: 1
    mbti_questions: 4
    max_iterations: 1
    budget_control: false
  05_qa_evaluation:
    characters: [ada-lindqvist]
    methods: [amadeus]
    method_settings: {{}}
    max_iterations: 1
    qa_questions: 1
    interviews: false
    check_items: 0         # the judge check's calls are the judging's, made below; the smoke run checks the check
    max_tokens: 8
    keypoint_tokens: 16
    k: 2
"""


def test_notebooks_03_and_05_with_only_the_base_url_and_model_set(server, tmp_path):
    profile = tmp_path / "server-tiny.yaml"
    profile.write_text(TINY.format(data=Path(__file__).parent / "fixtures" / "data"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RPA_LLM_", "RPA_JUDGE_", "OPENAI_"))}
    env.update(RPA_LLM_BASE_URL=server.base_url, RPA_LLM_MODEL=MODEL)
    done = subprocess.run([sys.executable, "-m", "rpa_lib.reproduce", "--profile", str(profile), "--only", "03,05",
                           "--output-dir", str(tmp_path / "out")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "03_chunk_usage" in done.stdout and "05_qa_evaluation" in done.stdout


def test_gs_and_ae_run_on_their_own_role_at_the_server_while_the_answer_stays_with_the_role_play_llm(server,
                                                                                                    monkeypatch):
    """The "gs" role at a real server (RPA_GS_BASE_URL): AMADEUS's judge and extractor calls reach it, the answer
    goes to the role-play LLM, and the role-play LLM's server setting is never used for GS."""
    from rpa_lib.evaluation.runner import Job, run_jobs
    from rpa_lib.llm import FakeLLM
    from rpa_lib.methods import build_method

    monkeypatch.setenv("RPA_GS_BASE_URL", server.base_url)
    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: GS must not go there
    gs = get_llm(f"openai:{MODEL}", role="gs", cache=False, timeout=TIMEOUT)
    agent = FakeLLM(label="role-play")
    amadeus = build_method("amadeus", agent, gs_llm=gs, dataset=Path(__file__).parent / "fixtures" / "data",
                           embedder="hash-64", max_iterations=2, extract_format="text")
    rows = run_jobs(amadeus, [Job("ada-lindqvist", "q1", "What keeps you awake at night?")], progress=False)
    assert rows.error.isna().all(), rows.error.tolist()
    assert gs.base_url == server.base_url and gs.usage.requests >= 3  # GS's judge calls and AE's two attributes
    assert agent.usage.calls == 1  # the answer


def test_the_in_process_llamacpp_engine_constrains_choice_and_structure():
    model = get_llm("llamacpp", cache=False)
    assert model.model_id.startswith("llamacpp:SmolLM2-135M-Instruct.Q4_1.gguf@")
    assert model.choose(user("Is fire hot?"), ["yes", "no"]).text in ("yes", "no")
    odd = ['say "hi"', "back\\slash", "two\nlines"]  # escaped into the grammar, answered verbatim
    assert model.choose(user("Pick one."), odd).text in odd
    rating = model.choose(user("Rate 1 to 5: fire is hot."), ["1", "2", "3", "4", "5"])
    assert set(rating.scores) == {"1", "2", "3", "4", "5"} and max(rating.scores.values()) <= 0  # log-probabilities
    assert set(model.structured(user("Ada is 36."), SCHEMA, max_tokens=40).data) >= {"name", "age"}
    assert model.usage.reasks == 0  # grammar-constrained: right the first time
    assert model.usage.to_dict()["replies"]["choose"] == {"replies": 3, "invalid": 0, "valid_share": 1.0, "coerced": 0}


def test_the_cpu_probe_runs_on_the_served_copy(served_model, capsys):
    """``python -m benchmarks cpu_probe``, short (its figures are in docs/benchmarks.md, not asserted here)."""
    assert cpu_probe.prompt_speed(served_model, tokens=16, runs=1) > 0
    with pytest.raises(SystemExit):
        cpu_probe.main(["--tokens", "0"])
    assert "--tokens must be 1 to 1,000" in capsys.readouterr().err
