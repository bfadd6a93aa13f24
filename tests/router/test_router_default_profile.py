"""The default profile's priority sequence, case by case (spec: routing-harness.md)."""

from __future__ import annotations

import pytest

from glider_cli.backends.registry import BackendRegistry, model_for
from glider_cli.config.load import load_config
from glider_cli.router import Router
from routing_helpers import message


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(load_config(profile="default"))


def test_sequence_order(router: Router) -> None:
    seq = [(r.priority, r.name) for r in router.rules]
    assert seq == [
        (100, "explicit_local"),
        (99, "explicit_cloud"),
        (95, "composer_wrapup_origin"),
        (85, "task_classifier.tools"),
        (80, "task_classifier.cloud"),
        (75, "complexity"),
        (70, "task_classifier.small"),
        (55, "swarm_fanout"),
        (50, "refactor_local"),
        (10, "large_context_cloud"),
        (5, "small_context_local"),
        (0, "default"),
    ]


@pytest.mark.parametrize(
    ("text", "tools", "rule", "target"),
    [
        ("/local design the whole architecture", True, "explicit_local", "local"),
        ("/fast please", False, "explicit_local", "local"),
        ("/cloud fix the typo", False, "explicit_cloud", "cloud"),
        ("fix the typo /heavy", False, "explicit_cloud", "cloud"),
        ("Summarize the changes you made in this session", False, "composer_wrapup_origin", "cloud"),
        ("fix the typo in README", True, "task_classifier.tools", "cloud"),
        ("design the architecture of the billing service", False, "task_classifier.cloud", "cloud"),
        ("fix the typo in README", False, "task_classifier.small", "local"),
        ("do this /swarm across workers", False, "swarm_fanout", "local"),
        ("[fanout] generate docstrings", False, "swarm_fanout", "local"),
        ("please refactor the parser module", False, "refactor_local", "local"),
        ("what now", False, "small_context_local", "local"),
    ],
)
def test_case_by_case(router: Router, text: str, tools: bool, rule: str, target: str) -> None:
    d = router.decide(message(text, tools=tools))
    assert (d.rule, d.target) == (rule, target)


@pytest.mark.parametrize("text", ["/local hi", "fix the typo in README", "please refactor it", "what now"])
def test_local_rules_name_the_backend_whose_model_is_used(router: Router, text: str) -> None:
    # The rules name no model (issue #13 §3): the bundled ollama backend carries it.
    d = router.decide(message(text))
    assert d.target == "local" and (d.backend, d.model, d.adapter) == ("ollama", None, None)
    backends = BackendRegistry(router.config.settings.backends, {})
    used = model_for(backends.get("ollama"), d.backend, d.model, d.adapter, "claude-opus-5-5")
    assert used == "qwen2.5-coder:14b"


def test_wrapup_goes_to_origin(router: Router) -> None:
    assert router.decide(message("summarize the conversation")).backend == "origin"


def test_fan_out_strategy(router: Router) -> None:
    d = router.decide(message("/swarm write tests"))
    assert d.strategy == "fan_out"


def test_context_size_split_at_8000(router: Router) -> None:
    big = router.decide(message("x " * 20000))
    assert (big.rule, big.target) == ("large_context_cloud", "cloud")
    assert big.request.estimated_tokens > 8000


def test_complexity_is_scored_but_off(router: Router) -> None:
    d = router.decide(message("investigate the async protocol performance in src/a.py and src/b.py"))
    assert d.request.complexity_source == "heuristic"
    assert d.request.complexity_score > 0
    cx = next(r for r in d.trace if r.rule == "complexity")
    assert not cx.matched and "complexity.enabled" in cx.reason


def test_complexity_enabled_routes_to_cloud(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("extends: default\nrouting:\n  complexity: {enabled: true, cloud_above: 20}\n")
    router = Router(load_config(config=str(cfg)))
    text = (
        "investigate the distributed concurrency and async performance issue in src/a.py, src/b.py, lib/c.go"
    )
    d = router.decide(message(text))
    assert (d.rule, d.target) == ("complexity", "cloud")
    cx = next(r for r in d.trace if r.rule == "complexity")
    assert cx.matched and "keywords +" in cx.reason and "concurrency" in cx.reason


def test_pure_local_last_rule_goes_local() -> None:
    router = Router(load_config(profile="pure-local"))
    last = router.rules[-1]
    assert (last.name, last.priority, last.action.target) == ("default", 0, "local")
    d = router.decide(message("x " * 20000))
    # Issue 13 §4: pure-local no longer routes like default (large contexts stayed on the cloud).
    assert (d.rule, d.target) == ("default", "local")


def test_complexity_is_scored_only_when_read_and_the_record_is_unchanged(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The router scores lazily: a decision that no complexity rule or script needed leaves the
    scoring to whoever reads the summary (the decision record, built off the request path)."""
    text = "investigate the async protocol performance in src/a.py and src/b.py"
    calls: list[str] = []
    real = router._scorer.score

    def counting(t: str, **kw: object) -> object:
        calls.append(t)
        return real(t, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(router._scorer, "score", counting)
    d = router.decide(message("/cloud " + text))  # decided at priority 99: nothing reads complexity
    assert calls == []
    record = d.to_dict()
    assert len(calls) == 1
    eager = real("/cloud " + text, messages=1, has_tools=False)
    assert record["request"]["complexity_score"] == eager.score == d.request.complexity_score
    assert record["complexity_signals"] == list(eager.signals)
    d.to_dict()
    assert len(calls) == 1  # scored once per decision
