"""The dashboard's Usage panel (Overview) and the Rules page's usage columns, in a real browser
(Chromium through Playwright) against a live Glider with its real event writer: requests served
today, and a week of earlier days written as the event writer writes them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml
from ui_tab import Tab

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def _send(url: str, text: str) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": text}]}
    r = httpx.post(url + "/v1/messages", json=body, headers={**HEADERS, "x-claude-code-session-id": "s1"})
    assert r.status_code == 200, r.text


def _earlier_days(context: Path, days: int) -> None:
    """One cloud and one local answer a day for `days` days before today, in the log's own format."""
    today = dt.datetime.now(dt.UTC).date()
    for back in range(1, days + 1):
        day = (today - dt.timedelta(days=back)).isoformat()
        ms = int(dt.datetime.fromisoformat(day + "T12:00:00+00:00").timestamp() * 1000)
        lines = []
        for i, (kind, model, tin) in enumerate(
            (
                ("OriginPassthrough", "claude-sonnet-4-5", 20_000 * back),
                ("FulfilledLocal", "qwen-local", 30_000),
            )
        ):
            turn = f"old-{back}-{i}"
            data = {
                "backend": "origin" if i == 0 else "ollama",
                "model": model,
                "status": 200,
                "input_tokens": tin,
                "output_tokens": 500,
                "ms": 900.0,
                "complete": True,
                "rule": "default" if i == 0 else "explicit_local",
                "requested_model": "claude-sonnet-4-5",
            }
            for j, (t, d) in enumerate((("TurnOpened", {"ask": "old", "session_id": "s0"}), (kind, data))):
                lines.append(
                    {
                        "v": 1,
                        "id": f"{ms:012x}{i * 4 + j:020x}",
                        "type": t,
                        "ts": f"{day}T12:00:00.000Z",
                        "turn_id": turn,
                        "prov": "RUNTIME",
                        "data": d,
                    }
                )
        context.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)
        (context / f"events-{day}.jsonl").write_text(text)


def test_the_usage_panel_charts_spend_and_savings_per_day(
    tmp_path: Path, fake: FakeUpstream, tab: Tab
) -> None:
    _earlier_days(tmp_path / "home" / "context", 6)
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False) as g:
        fake.set_reply(usage=(4000, 300))
        _send(g.url, "/cloud plan the refactor")
        _send(g.url, "/local fix the typo")
        api = httpx.get(g.url + "/api/context/usage", params={"days": "14"}, timeout=60).json()
        assert len(api["daily"]) == 7 and api["totals"]["local_calls"] == 7

        tab.page.goto(g.url + "/ui/")
        tab.page.wait_for_selector("#usage-tiles")
        tiles = tab.page.locator("#usage-tiles .tile").all_inner_texts()
        t = api["totals"]
        assert f"${t['cloud_cost']:.2f}\ncloud spend" in tiles
        assert f"${t['savings']:.2f}\nsaved (estimate)" in tiles
        assert f"{round(t['local_turn_share'] * 100)}%\nturns served locally" in tiles
        # One group of bars per day, each bar as tall as its dollars (the same scale for both).
        days = tab.page.locator("#usage-chart g.usage-day")
        assert days.count() == 7
        heights = tab.page.eval_on_selector_all(
            "#usage-chart g.usage-day rect.bar-cloud", "rs => rs.map(r => +r.getAttribute('height'))"
        )
        spend = [d["cloud_cost"] for d in api["daily"]]
        assert len(heights) == 7 and heights.index(max(heights)) == spend.index(max(spend))
        label = tab.page.locator("#usage-chart").get_attribute("aria-label") or ""
        assert label.startswith("Cloud spend $") and "estimated savings" in label
        assert "Savings are estimates" in tab.page.locator("#usage").inner_text()
        tab.page.locator("#usage-panel").scroll_into_view_if_needed()
        tab.shot("usage-panel")

        tab.page.goto(g.url + "/ui/rules")
        tab.page.wait_for_selector("#rules table")
        heads = tab.page.locator("#rules thead th").all_inner_texts()
        assert {"Local share 14 d", "Regret 14 d", "Saved 14 d (est.)"} <= set(heads)
        row = (
            tab.page.locator("#rules tbody tr", has_text="explicit_local")
            .first.locator("td")
            .all_inner_texts()
        )
        at = heads.index("Local share 14 d")
        by_rule = httpx.get(
            g.url + "/api/context/usage", params={"days": "14", "by": "rule"}, timeout=60
        ).json()
        local = next(r for r in by_rule["rows"] if r["key"] == "explicit_local")
        assert row[at : at + 3] == ["100%", "0%", f"${local['savings']:.2f}"]
        tab.shot("rules-usage-columns")
    assert tab.errors == []
