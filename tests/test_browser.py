"""The explorer in a real browser: JupyterLab from this environment on 127.0.0.1 with a token, driven by Debian's
Chromium through Playwright. Opens ``notebooks/00_explore.ipynb`` (a copy, so the tracked file gets no outputs),
runs it, asks a question through the widget on the fake LLM and checks that the retrieved chunks, GS's verdicts
and the reply are rendered; saves a screenshot (in the test's folder; with ``UPDATE_SCREENSHOT=1`` also as
``docs/explorer.png``, the one the README shows, so a plain ``make test`` leaves the tracked file alone).

Skipped, with the reason, where Playwright or a Chromium binary is missing: ``make browser`` installs Chromium
(Debian's ``chromium`` package); ``make test`` runs this test. Playwright's own browser download is not used.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("RPA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
SCREENSHOT = ROOT / "docs" / "explorer.png"

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements.txt)")
if not Path(CHROMIUM).is_file():
    pytest.skip(f"no Chromium at {CHROMIUM}: run `make browser` (installs Debian's chromium) or set RPA_CHROMIUM",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _explorer_copy(folder: Path) -> Path:
    """notebooks/00_explore.ipynb with its parameters set for a fast offline run: the fake LLM, the hash embedder."""
    nb = json.loads((ROOT / "notebooks" / "00_explore.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ['data_dir = None\n', 'llm = "fake"\n', 'character = "frieren"\n',
                      'methods = ["naive_rag", "amadeus"]\n', 'embedder = "hash-64"\n', 'question = ""\n']
    path = folder / "00_explore.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1 rooted at a folder holding the explorer; yields its base URL and token."""
    _explorer_copy(tmp_path)
    port, token = _free_port(), secrets.token_hex(16)
    jupyter = Path(sys.executable).parent / "jupyter"
    cmd = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={tmp_path}", "--ServerApp.open_browser=False", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    settings = tmp_path / "lab-settings" / "@jupyterlab"
    for name, values in (("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
                         ("notebook-extension/tracker", {"autoStartDefaultKernel": True})):
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"), "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings")}
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"jupyter lab exited: {(tmp_path / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail(f"jupyter lab did not answer in 60 s: {(tmp_path / 'lab.log').read_text()[-2000:]}")
        yield url, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernel it started
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_explorer_answers_a_question_in_chromium(lab, tmp_path):
    url, token = lab
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(str(tmp_path / "chromium-profile"), executable_path=CHROMIUM,
                                                       headless=True, args=FLAGS, viewport={"width": 1600, "height": 1000})
        try:
            page = browser.new_page()
            page.set_default_timeout(90_000)  # a loaded CI machine starts kernels slowly
            page.goto(f"{url}/lab/tree/00_explore.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
            select = page.locator(".jp-Dialog button", has_text="Select")  # a kernel choice, when one is asked
            if select.count():
                select.first.click()
            page.get_by_text("Python 3 | Idle").wait_for()  # the kernel is up
            page.wait_for_timeout(1500)
            # opening changes nothing: the notebook carries the kernelspec and language_info JupyterLab would write
            assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0
            cells = page.locator(".jp-Notebook .jp-Cell")
            cells.first.click()
            for _ in range(cells.count()):  # run every cell in turn, as Run All does
                page.keyboard.press("Shift+Enter")
            question = page.get_by_placeholder("Ask the character a question…")
            question.fill("What do you value most in a journey?")
            page.get_by_role("button", name="Ask").click()
            compare = page.locator(".rpa-compare")
            compare.wait_for()
            text = compare.inner_text()
            assert "Naive RAG" in text and "AMADEUS" in text  # the methods' display names
            assert "Retrieved" in text and "Frieren" in text  # the retrieved chunks and their heading paths
            assert "Guided Selection" in text and ("kept" in text or "GS failed" in text)  # GS's verdicts
            assert text.count("fake reply") == 2  # one reply per method
            assert "Context that reached the LLM" in text
            page.keyboard.press("Control+b")  # hide the file browser: the columns get the width
            page.locator(".rpa-compare").scroll_into_view_if_needed()
            page.mouse.wheel(0, -250)
            page.screenshot(path=str(tmp_path / "explorer.png"))
            if os.environ.get("UPDATE_SCREENSHOT") == "1":
                shutil.copyfile(tmp_path / "explorer.png", SCREENSHOT)
            # the persona browser rendered too: ACTS chunks with l_max and overlap
            assert page.get_by_text("l_max =").count() >= 1
        except Exception:
            page.screenshot(path=str(tmp_path / "failed.png"))  # what the browser showed, beside lab.log
            raise
        finally:
            browser.close()
