"""Every inbound shape, fuzzed through the real app: 2xx or a protocol-shaped 4xx, never a 5xx.

hypothesis mutates valid Anthropic, Chat and Responses bodies (a field replaced by a value of another
type, a field dropped, items of the wrong shape) and sends them through `create_app` with its real
parse, routing and translation to an Ollama-speaking backend or passthrough to the cloud (a strict
fake answers both). Plus the shapes found by hand.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"], ollama_models=["qwen-local"])]

PATHS = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}
BASE: dict[str, dict[str, Any]] = {
    "anthropic": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "/local hi"}]},
    "openai_chat": {"model": "m", "messages": [{"role": "user", "content": "/local hi"}]},
    "openai_responses": {"model": "m", "input": "/local hi"},
}
FIELDS = ["model", "messages", "input", "tools", "system", "max_tokens", "stream", "tool_choice",
          "temperature", "instructions", "metadata", "content", "role"]  # fmt: skip
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fuzz")
    config = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
    )
    with GliderServer(config, tmp, record=False) as g:
        yield g


def _mutate(body: dict[str, Any], key: str, value: Any, where: str) -> dict[str, Any]:
    out = json.loads(json.dumps(body))
    if where == "top":
        out[key] = value
    elif where == "drop":
        out.pop(key, None)
    else:  # inside the first message / input item
        items = out.get("messages") or out.get("input")
        if isinstance(items, list) and items and isinstance(items[0], dict):
            items[0][key] = value
        else:
            out["input"] = [{key: value}]
    return out


def _check(g: Any, protocol: str, body: Any) -> None:
    r = httpx.post(
        g.url + PATHS[protocol],
        content=json.dumps(body),
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code < 500, (r.status_code, r.text, body)
    if r.status_code >= 400:
        err = r.json()
        assert "error" in err, err  # protocol-shaped


# The live server runs in another thread and its libraries use the `random` module while hypothesis
# draws; hypothesis would take that for a strategy using `random` (its deprecation warning).
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    protocol=st.sampled_from(sorted(PATHS)),
    key=st.sampled_from(FIELDS),
    value=junk,
    where=st.sampled_from(["top", "drop", "item"]),
)
def test_any_mutated_body_is_2xx_or_a_protocol_shaped_4xx(
    glider: Any, protocol: str, key: str, value: Any, where: str
) -> None:
    _check(glider, protocol, _mutate(BASE[protocol], key, value, where))


@pytest.mark.parametrize(
    ("protocol", "body"),
    [
        ("openai_chat", {**BASE["openai_chat"], "tools": 630}),
        ("openai_responses", {**BASE["openai_responses"], "tools": 3.5}),
        ("openai_chat", {**BASE["openai_chat"], "tools": [5]}),
    ],
)
def test_the_shapes_that_answered_500_are_400s(glider: Any, protocol: str, body: dict[str, Any]) -> None:
    r = httpx.post(glider.url + PATHS[protocol], json=body, timeout=30)
    assert r.status_code == 400, r.text
    assert "tools" in r.json()["error"]["message"]
