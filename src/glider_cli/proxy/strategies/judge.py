"""Judges and the request bodies of member calls. Pure: no I/O, no clock.

candidate_text(resp) -> str              what a judge compares: the text, then `[tool name(args)]` per call
agreement(texts) -> (index, scores)     the candidate closest to the others (rapidfuzz token_set_ratio
                                        summed over the others; ties go to the earlier candidate)
judge_prompt(ask, texts) -> str          what a model judge is asked: the request and the numbered candidates
judge_index(reply, n) -> int | None      the index a model judge answered (the first number in range)
member_body(protocol, body, temperature=, followup=) -> dict
    The client's body for one member call: not streamed, the member's temperature, and `followup`
    (role, text) messages appended (a pipeline stage's input: the previous answer and the stage's
    instruction). `openai_responses` bodies carry messages in `input` (a string becomes one message).
plain_body(protocol, prompt, max_tokens) -> dict   a one-message request in the client's protocol
stage_followup(role, previous) -> [(role, text)]   a pipeline stage's added messages
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from glider_cli.protocol import ir

__all__ = [
    "agreement",
    "candidate_text",
    "judge_index",
    "judge_prompt",
    "member_body",
    "plain_body",
    "stage_followup",
]

_NUMBER = re.compile(r"\d+")
_JUDGE_CHARS = 4000  # of each candidate shown to a model judge

PLAN_PROMPT = (
    "Do not answer yet. Write a short numbered plan (at most 6 steps) for answering the request above."
)
REVIEW_PROMPT = (
    "The message above is a draft answer to the request before it. Check it for mistakes and correct "
    "them. Reply with the final answer only, written as the answer to the request itself."
)
EXECUTE_PROMPT = "Carry out the plan above and answer the request. Reply with the answer only."


def candidate_text(resp: ir.Response) -> str:
    out = []
    for p in resp.parts:
        if isinstance(p, ir.Text):
            out.append(p.text)
        elif isinstance(p, ir.ToolCall):
            out.append(f"[tool {p.name}({p.arguments})]")
    return "".join(out).strip()


def agreement(texts: Sequence[str]) -> tuple[int, list[float]]:
    from rapidfuzz import fuzz

    scores = [
        sum(fuzz.token_set_ratio(t, u) for j, u in enumerate(texts) if j != i) for i, t in enumerate(texts)
    ]
    best = max(range(len(texts)), key=lambda i: (scores[i], -i))
    return best, scores


def judge_prompt(ask: str, texts: Sequence[str]) -> str:
    lines = [
        f"Here is a request and {len(texts)} candidate answers to it. Which candidate answers it best "
        "(correct first, then complete and clear)? Reply with the candidate's number only.",
        "",
        "Request:",
        ask,
    ]
    for i, t in enumerate(texts):
        lines += ["", f"Candidate {i}:", t[:_JUDGE_CHARS]]
    lines += ["", f"The number of the best candidate (0 to {len(texts) - 1}):"]
    return "\n".join(lines)


def judge_index(reply: str, n: int) -> int | None:
    for m in _NUMBER.finditer(reply):
        value = int(m.group())
        if 0 <= value < n:
            return value
    return None


def member_body(
    protocol: str,
    body: dict[str, Any],
    *,
    temperature: float | None = None,
    followup: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    out = dict(body)
    out["stream"] = False
    out.pop("stream_options", None)
    if temperature is not None:
        out["temperature"] = temperature
    if followup:
        key = "input" if protocol == "openai_responses" else "messages"
        items = out.get(key)
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        out[key] = [*(items if isinstance(items, list) else []), *_messages(protocol, followup)]
    return out


def _messages(protocol: str, followup: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    if protocol == "openai_responses":
        kinds = {"assistant": "output_text", "user": "input_text"}
        return [
            {"type": "message", "role": r, "content": [{"type": kinds[r], "text": t}]} for r, t in followup
        ]
    return [{"role": r, "content": t} for r, t in followup]


def plain_body(protocol: str, prompt: str, *, max_tokens: int) -> dict[str, Any]:
    if protocol == "openai_responses":
        return {"input": prompt, "max_output_tokens": max(16, max_tokens), "stream": False}
    if protocol == "anthropic":
        return {"max_tokens": max_tokens, "messages": [{"role": "user", "content": prompt}], "stream": False}
    return {"max_tokens": max_tokens, "messages": [{"role": "user", "content": prompt}], "stream": False}


def stage_followup(role: str | None, previous: str | None) -> list[tuple[str, str]]:
    if previous is None:
        return [("user", PLAN_PROMPT)] if role == "plan" else []
    if role == "execute":
        return [("assistant", previous), ("user", EXECUTE_PROMPT)]
    return [("assistant", previous), ("user", REVIEW_PROMPT)]
