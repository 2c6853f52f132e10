"""Mistakes a researcher makes configuring the LLM layer, each named at once by the setting it is in: a base URL
with a typo'd scheme, no host, replicas not separated by commas, the endpoint in place of the base URL, a password
without its ``@`` (never shown); a server that answers HTML, a 404 from a URL without ``/v1``, a port where nothing
listens; a setting name no code reads; ``.env`` lines with quotes and a comment, a tab, a byte order mark; a spec or
``max_workers`` that would run something else; a mode typo of the GS role. No real server: mock ones on 127.0.0.1."""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import ThreadingHTTPServer

import pytest

from benchmarks.mock_server import JSONHandler, chat_completion, default_answer
from rpa_lib.llm import LLMError, LLMFatalError, RetryPolicy, get_llm
from rpa_lib.llm.factory import RunMode
from rpa_lib.llm.fake import FakeLLM
from rpa_lib.llm.openai_backend import OpenAILLM, public_url
from rpa_lib.settings import read_dotenv

QUICK = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001)
PASSWORD = "sk-SECRET-pw-4711"


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


class _Fixed(JSONHandler):
    """Answers every request with ``status``, ``content_type`` and ``body``, then closes the connection (so that a
    server shut down refuses the next request); counts the POSTs."""

    protocol_version = "HTTP/1.0"

    status, content_type, body, posts = 200, "text/html", b"<html><body>Welcome to nginx</body></html>", 0

    def _answer(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).posts += 1
        self._answer()


@pytest.fixture
def fixed_server():
    """``start(status, content_type, body)`` -> (``http://127.0.0.1:PORT``, the handler class counting POSTs);
    ``start.stop()`` stops every server started."""
    servers = []

    def stop() -> None:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()
        servers.clear()

    def start(status: int, content_type: str, body: bytes):
        handler = type("Handler", (_Fixed,), {"status": status, "content_type": content_type, "body": body,
                                              "posts": 0})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}", handler

    start.stop = stop
    yield start
    stop()


def test_dotenv_reads_a_quoted_value_with_a_comment_a_tab_and_a_byte_order_mark(tmp_path):
    path = tmp_path / ".env"
    path.write_text('\ufeffOPENAI_API_KEY=sk-abc\n'  # an editor's byte order mark: the name is still OPENAI_API_KEY
                    'RPA_LLM_MODEL="gpt-4.1" # the paper\'s model\n'
                    "export\tRPA_LLM_TIMEOUT=30\t# seconds\n"
                    "RPA_JUDGE_MODEL = 'gpt-4.1-mini'\n"
                    'RPA_LLM_BASE_URL="http://h:8000/v1#not-a-comment"\n', encoding="utf-8")
    assert read_dotenv(path) == {"OPENAI_API_KEY": "sk-abc", "RPA_LLM_MODEL": "gpt-4.1", "RPA_LLM_TIMEOUT": "30",
                                 "RPA_JUDGE_MODEL": "gpt-4.1-mini", "RPA_LLM_BASE_URL": "http://h:8000/v1#not-a-comment"}


@pytest.mark.parametrize(("url", "problem"), [
    ("htp://127.0.0.1:8000/v1", "must start with http:// or https://.*it starts with 'htp:'"),
    ("localhost:8000/v1", "must start with http:// or https://"),
    ("127.0.0.1:8000/v1", "must start with http:// or https://.*it has none"),
    (" , ", "names no URL"),
    ("http:///v1", "names no host"),
    ("http://10.0.0.1:8000/v1 http://10.0.0.2:8000/v1", "separate replicas with commas"),
    ("http://10.0.0.1:8000/v1;http://10.0.0.2:8000/v1", "separate replicas with commas"),
    ("http://10.0.0.1:8000/v1,http://10.0.0.2:80a/v1", "port is not a number"),
    ("http://10.0.0.1:8000/v1/chat/completions", "give the server's base URL, http://10.0.0.1:8000/v1$"),
])
def test_a_bad_base_url_is_named_when_the_llm_is_built(monkeypatch, url, problem):
    monkeypatch.setenv("RPA_LLM_BASE_URL", url)
    monkeypatch.setenv("RPA_LLM_MODEL", "smollm2")
    with pytest.raises(ValueError, match=rf"RPA_LLM_BASE_URL.*{problem}"):
        get_llm(cache=False)


def test_the_judge_url_error_names_its_settings_and_a_password_in_the_port_is_never_shown(monkeypatch):
    monkeypatch.setenv("RPA_JUDGE_MODEL", "judge")
    monkeypatch.setenv("RPA_JUDGE_BASE_URL", f"http://user:{PASSWORD}/v1")  # the @ forgotten: read as the port
    with pytest.raises(ValueError, match="RPA_JUDGE_BASE_URL, else RPA_LLM_BASE_URL.*port is not a number") as err:
        get_llm(role="judge", cache=False)
    assert PASSWORD not in str(err.value)
    with pytest.raises(ValueError) as err:  # how a run's stamp shows a URL setting
        public_url(f"http://user:{PASSWORD}/v1")
    assert PASSWORD not in str(err.value)
    with pytest.raises(ValueError, match="must start with http:// or https://") as err:  # neither user nor password
        OpenAILLM("m", base_url=f"{PASSWORD}:{PASSWORD}@10.0.0.1:8000/v1")
    assert PASSWORD not in str(err.value)
    assert OpenAILLM("m", base_url=f"http://user:{PASSWORD};x@10.0.0.1/v1").base_url == "http://10.0.0.1/v1"


def test_a_server_answering_html_stops_the_run_at_the_first_call(fixed_server):
    url, handler = fixed_server(200, "text/html; charset=utf-8", b"<html><body>Welcome to nginx</body></html>")
    llm = get_llm("openai:m", base_url=f"{url}/v1", cache=False, retry=QUICK)
    with pytest.raises(LLMFatalError, match="answered a chat completion request with text/html, not JSON.*"
                                            "RPA_LLM_BASE_URL"):
        llm.chat(user("hi"))
    assert handler.posts == 1  # not asked again


def test_a_404_from_a_base_url_without_v1_says_so(fixed_server):
    url, _ = fixed_server(404, "application/json", b'{"detail": "Not Found"}')
    with pytest.raises(LLMFatalError, match="usually ends in /v1"):
        get_llm("openai:m", base_url=url, cache=False, retry=QUICK).chat(user("hi"))
    with pytest.raises(LLMFatalError) as err:  # the model or the route is wrong: no word of /v1
        get_llm("openai:m", base_url=f"{url}/v1", cache=False, retry=QUICK).chat(user("hi"))
    assert "/v1;" not in str(err.value) and "usually ends" not in str(err.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_stops_the_run_but_a_server_that_answered_then_went_away_does_not(fixed_server):
    llm = get_llm("openai:m", base_url=f"http://127.0.0.1:{_free_port()}/v1", cache=False, retry=QUICK)
    outcomes = None
    with pytest.raises(LLMFatalError, match="failed after 2 attempts: connection failed.*nothing has answered at "
                                            r"http://127\.0\.0\.1:\d+/v1 in this run: is the server running, and is "
                                            r"the base URL \(RPA_LLM_BASE_URL"):
        outcomes = llm.map(lambda q: llm.chat(user(q)).text, ["a", "b", "c", "d"], progress=False, workers=1)
    assert outcomes is None  # the map stopped at the first item, not every item waiting out its retries
    answer = json.dumps(chat_completion({"messages": user("hi")}, default_answer, 1)).encode()
    url, _ = fixed_server(200, "application/json", answer)
    llm = get_llm("openai:m", base_url=f"{url}/v1", cache=False, retry=QUICK)
    assert llm.chat(user("hi")).text == "echo: hi"
    fixed_server.stop()
    with pytest.raises(LLMError, match="connection failed") as err:  # stopped mid-run: an item's failure, as before
        llm.chat(user("again"))
    assert not isinstance(err.value, LLMFatalError)


@pytest.mark.parametrize(("name", "hint"), [
    ("RPA_LLM_BASEURL", "did you mean RPA_LLM_BASE_URL"),
    ("RPA_BUDGET_US", "did you mean RPA_BUDGET_USD"),
    ("RPA_PRICE_INPUT", "did you mean RPA_PRICE_IN"),
    ("RPA_JUDGE_MODLE", "did you mean RPA_JUDGE_MODEL"),
    ("RPA_LLM_API_KEY", "the role-play LLM's key is OPENAI_API_KEY"),
    ("RPA_GS_MODEL", "GS's model is the gs_llm parameter"),
])
def test_a_setting_no_code_reads_is_named_with_the_one_meant(monkeypatch, name, hint):
    monkeypatch.setenv(name, PASSWORD)
    with pytest.raises(ValueError, match=rf"{name} \(environment or .env\) is not a setting \({hint}") as err:
        get_llm("fake")
    assert PASSWORD not in str(err.value)


def test_a_misspelt_setting_in_dotenv_is_named_too(tmp_path, monkeypatch):
    monkeypatch.setattr("rpa_lib.settings.DOTENV", tmp_path / ".env")
    (tmp_path / ".env").write_text("RPA_LLM_MODEL=fake\nRPA_LLM_MODLE=gpt-4.1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="RPA_LLM_MODLE .*did you mean RPA_LLM_MODEL"):
        get_llm(role="judge")


@pytest.mark.parametrize("workers", ["8", 0, -2, 2.5, True])
def test_max_workers_must_be_a_whole_number_of_one_or_more(workers):
    """Checked where every backend takes it (``LLM.__init__``): through ``get_llm`` and a backend built directly."""
    with pytest.raises(ValueError, match=r"max_workers must be a whole number of 1 or more, got"):
        get_llm("fake", max_workers=workers)
    with pytest.raises(ValueError, match=r"max_workers must be a whole number of 1 or more, got"):
        FakeLLM(max_workers=workers)
    assert get_llm("fake", max_workers=3).max_workers == 3


@pytest.mark.parametrize(("spec", "meant"), [("Local", "local"), ("FAKE", "fake"), ("opnai:gpt-4.1", "openai"),
                                             ("llamacp", "llamacpp")])
def test_a_misspelt_spec_is_not_sent_to_openai_as_a_model_name(spec, meant):
    with pytest.raises(ValueError, match=f"did you mean '{meant}'"):
        get_llm(spec, cache=False)


def test_real_model_names_and_a_spec_with_spaces_still_work():
    assert isinstance(get_llm(" fake ", cache=False), FakeLLM)
    for name in ("gpt-4.1", "llama3:8b", "openai/gpt-oss-20b"):
        assert get_llm(name, cache=False).model == name
    assert get_llm("Local", base_url="http://127.0.0.1:8000/v1", cache=False).model == "Local"  # a served name


def test_run_mode_must_be_a_dict():
    with pytest.raises(ValueError, match="run_mode must be a dict such as"):
        RunMode.of("budget_usd=5")


def test_a_mode_typo_of_the_gs_role_names_its_setting(monkeypatch):
    monkeypatch.setenv("RPA_GS_CHOOSE_MODE", "logprob")
    with pytest.raises(ValueError, match=r"choose_mode \(RPA_GS_CHOOSE_MODE or choose_mode=\) must be auto or one of"):
        get_llm("openai:m", role="gs", base_url="http://127.0.0.1:8000/v1", cache=False)


@pytest.mark.parametrize(("name", "value"), [("RPA_PRICE_IN", "abc"), ("RPA_PRICE_IN", "-1"), ("RPA_PRICE_OUT", "2$")])
def test_a_bad_price_is_named(monkeypatch, name, value):  # held as it was: a guard for the settings above
    monkeypatch.setenv("RPA_PRICE_IN", "2")
    monkeypatch.setenv("RPA_PRICE_OUT", "8")
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=rf"{name} must be a non-negative number of dollars, got '{re.escape(value)}'"):
        get_llm("fake")


def test_a_server_whose_models_list_is_not_openais_still_answers(fixed_server):
    answer = json.dumps(chat_completion({"messages": user("hi")}, default_answer, 1)).encode()
    url, _ = fixed_server(200, "application/json", answer)  # GET /v1/models: JSON without "data"
    assert get_llm("openai:m", base_url=f"{url}/v1", cache=False, retry=QUICK).chat(user("hi")).text == "echo: hi"
