"""Hand-written OpenAI Responses replies for the fake upstream (JSON body and the full SSE event set).

Split from fake_wire.py; like it, deliberately independent of `glider_cli.protocol`.

A reply that stopped at the output-token limit (`Plan.at_limit`, no tool call) is what the Responses
API sends then: the response's `status` is `incomplete` with `incomplete_details: {"reason":
"max_output_tokens"}` (its usage still reported), its message item's `status` is `incomplete` too, and a
stream ends with `response.incomplete` instead of `response.completed`.
"""

from __future__ import annotations

import time
from typing import Any

from fake_wire import Plan, halves, new_id, pieces, sse_event


def _limited(plan: Plan) -> bool:
    """The reply stopped at the output-token limit (a tool call wins, as in `Plan.stop`)."""
    return plan.at_limit and plan.tool_name is None


def _responses_output(plan: Plan, ids: dict[str, str]) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if plan.thinking is not None:
        output.append(
            {
                "id": ids["rs"],
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": plan.thinking}],
                "encrypted_content": "fake-encrypted",
            }
        )
    output.append(
        {
            "id": ids["msg"],
            "type": "message",
            "status": "incomplete" if _limited(plan) else "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": plan.text, "annotations": [], "logprobs": []}],
        }
    )
    if plan.tool_name is not None:
        output.append(
            {
                "id": ids["fc"],
                "type": "function_call",
                "status": "completed",
                "call_id": ids["call"],
                "name": plan.tool_name,
                "arguments": plan.args_json,
            }
        )
    return output


_DEFAULTS = {"instructions": None, "max_output_tokens": None, "temperature": 1.0, "top_p": 1.0}


def _responses_object(plan: Plan, ids: dict[str, str], status: str, output: list[Any]) -> dict[str, Any]:
    tin, tout = plan.usage
    done = status in ("completed", "incomplete")
    return {  # the request's own settings echoed (`Plan.echo`), over the API's defaults
        **_DEFAULTS,
        **plan.echo,
        "id": ids["resp"],
        "object": "response",
        "created_at": ids["created"],
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "model": plan.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "truncation": "disabled",
        "metadata": {},
        "usage": {
            "input_tokens": tin,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": tout,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tin + tout,
        }
        if done
        else None,
    }


def _responses_ids() -> dict[str, Any]:
    return {
        "resp": new_id("resp_"),
        "msg": new_id("msg_"),
        "fc": new_id("fc_"),
        "call": new_id("call_"),
        "rs": new_id("rs_"),
        "created": int(time.time()),
    }


def responses_events(plan: Plan) -> list[bytes]:
    ids = _responses_ids()
    seq = 0
    events: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        nonlocal seq
        events.append(sse_event(kind, {"type": kind, "sequence_number": seq, **data}))
        seq += 1

    final = _responses_output(plan, ids)
    emit("response.created", response=_responses_object(plan, ids, "in_progress", []))
    emit("response.in_progress", response=_responses_object(plan, ids, "in_progress", []))
    oi = 0
    if plan.thinking is not None:
        item = final[oi]
        emit("response.output_item.added", output_index=oi, item={**item, "summary": []})
        emit(
            "response.reasoning_summary_part.added",
            item_id=item["id"],
            output_index=oi,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        )
        for p in pieces(plan.thinking):
            emit(
                "response.reasoning_summary_text.delta",
                item_id=item["id"],
                output_index=oi,
                summary_index=0,
                delta=p,
            )
        emit(
            "response.reasoning_summary_text.done",
            item_id=item["id"],
            output_index=oi,
            summary_index=0,
            text=plan.thinking,
        )
        emit(
            "response.reasoning_summary_part.done",
            item_id=item["id"],
            output_index=oi,
            summary_index=0,
            part={"type": "summary_text", "text": plan.thinking},
        )
        emit("response.output_item.done", output_index=oi, item=item)
        oi += 1
    msg = final[oi]
    emit(
        "response.output_item.added",
        output_index=oi,
        item={
            "id": msg["id"],
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        },
    )
    emit(
        "response.content_part.added",
        item_id=msg["id"],
        output_index=oi,
        content_index=0,
        part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
    )
    for p in pieces(plan.text):
        emit(
            "response.output_text.delta",
            item_id=msg["id"],
            output_index=oi,
            content_index=0,
            delta=p,
            logprobs=[],
        )
    emit(
        "response.output_text.done",
        item_id=msg["id"],
        output_index=oi,
        content_index=0,
        text=plan.text,
        logprobs=[],
    )
    emit(
        "response.content_part.done",
        item_id=msg["id"],
        output_index=oi,
        content_index=0,
        part=msg["content"][0],
    )
    emit("response.output_item.done", output_index=oi, item=msg)
    oi += 1
    if plan.tool_name is not None:
        fc = final[oi]
        emit(
            "response.output_item.added",
            output_index=oi,
            item={**fc, "status": "in_progress", "arguments": ""},
        )
        for part in halves(plan.args_json):
            emit("response.function_call_arguments.delta", item_id=fc["id"], output_index=oi, delta=part)
        emit(
            "response.function_call_arguments.done",
            item_id=fc["id"],
            output_index=oi,
            name=fc["name"],
            arguments=plan.args_json,
        )
        emit("response.output_item.done", output_index=oi, item=fc)
    end = "incomplete" if _limited(plan) else "completed"
    emit(f"response.{end}", response=_responses_object(plan, ids, end, final))
    return events


def responses_json(plan: Plan) -> dict[str, Any]:
    ids = _responses_ids()
    end = "incomplete" if _limited(plan) else "completed"
    return _responses_object(plan, ids, end, _responses_output(plan, ids))
