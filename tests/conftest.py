"""Autouse fixtures: GLIDER_HOME in a temporary directory, no proxy variables, plain output. Shared
fixtures: the fake upstream, the real Claude Code CLI, and a real llama.cpp server with a small model
behind a logging relay (tests/llama_server.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import claude_code
import llama_server
import npm_cli
from fake_upstream import FakeUpstream

_PROXY_VARS = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


def pytest_configure(config: pytest.Config) -> None:
    """The agent CLIs' first npm install takes minutes: its progress lines reach the terminal, past
    pytest's output capture."""

    def write(text: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if capman is None or reporter is None:
            sys.stderr.write(text + "\n")
            return
        with capman.global_and_fixture_disabled():
            reporter.write_line(text)

    npm_cli.tell_to(write)


@pytest.fixture(autouse=True)
def glider_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "glider-home"
    monkeypatch.setenv("GLIDER_HOME", str(home))
    monkeypatch.delenv("GLIDER_CONFIG", raising=False)
    monkeypatch.delenv("GLIDER_TOKEN", raising=False)
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("TERM", "dumb")
    yield home


@pytest.fixture(scope="module")
def fake(request: pytest.FixtureRequest) -> Iterator[FakeUpstream]:
    """A fake upstream speaking the Anthropic, OpenAI and Ollama wire formats on 127.0.0.1, one per
    test module (tests that change its reply or faults reset it). As strict as the real services: it
    serves only the models of the module's `pytest.mark.fake_serves(models=..., ollama_models=...)`."""
    marker = request.node.get_closest_marker("fake_serves")
    with FakeUpstream(**(marker.kwargs if marker is not None else {})) as f:
        yield f


@pytest.fixture(scope="session")
def claude_bin() -> str:
    """The real Claude Code CLI (installed once with npm if needed); skips only when it cannot be had."""
    found, why = claude_code.find_or_install()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture(scope="session")
def llama_install() -> llama_server.LlamaInstall:
    """The llama.cpp server's interpreter and model (.ci/run builds them); skips only when they are not to
    be had."""
    found, why = llama_server.find()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture(scope="session")
def llama(llama_install: llama_server.LlamaInstall) -> Iterator[llama_server.LlamaServer]:
    """One real `llama_cpp.server` (SmolLM2-135M, n_ctx 8192) on 127.0.0.1 for the whole session."""
    with llama_server.LlamaServer(llama_install) as server:
        yield server


@pytest.fixture(scope="session")
def _llama_relay(llama: llama_server.LlamaServer) -> Iterator[llama_server.LoggingRelay]:
    with llama_server.LoggingRelay(llama.url) as relay:
        yield relay


@pytest.fixture
def llama_relay(_llama_relay: llama_server.LoggingRelay) -> llama_server.LoggingRelay:
    """The logging relay in front of the real llama.cpp server, its record emptied for this test."""
    _llama_relay.clear()
    return _llama_relay
