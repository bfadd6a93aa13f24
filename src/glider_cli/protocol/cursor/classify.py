"""What a Cursor request is, read from its protocol fields (never from its wording).

- `rpc(path)`: which of Cursor's methods a path names (`run_sse`, `run` (HTTP/2 only), `append`,
  `name_agent` (a title: `NameAgent`, or the legacy `AiService/NameTab`), or `other`).
- `decode_append(body, encoding)`: a `BidiAppend` body -> `Append` (the run's request id, the seqno,
  the client message's bytes from `data` (lowercase hex) or `data_binary`); None when the body is not
  a BidiAppendRequest this proxy can read (it is then forwarded as it came).
- `run_sse_id(body, encoding)`: the request id a `RunSSE` request names (its one envelope holds a
  `BidiRequestId`), or None.
- `classify(message, headers)`: one `AgentClientMessage` -> `Classified`:
  `new_turn` (a run request or a user-message action whose user message has text and is not
  `is_simulated_msg`), `follow_on` (`is_simulated_msg`, or an execute-plan, background-task,
  background-shell, background-subagent, resume or async-question action), `summary`
  (`summarize_action`), `subagent` (a run request with `subagent_type_name`, or the `X-Parent-*`
  headers), `run_traffic` (tool results, KV acks, heartbeats, exec control, interaction responses,
  cancels: they go wherever their run's stream goes), `passthrough` (a prewarm, a run request with no
  action, text held only in a blob, anything undecodable). A user message sent into a run that is
  still open (`conversation_action` on the same request id) is `in_run` set: it follows its run.
- `name_agent_text(body, encoding)`: the text a `NameAgent` (title) request carries.
- `title_text(path, body, encoding)`: the text a title request names, read as its own method's
  request: a `NameAgentRequest`'s `user_message`, or for `NameTab` a `NameTabRequest` (the
  conversation's messages) and the text of its last human message; None when there is none or the
  body cannot be read (the request then passes through unread).
Hints for `complexity_source: cursor`: `max_mode` (model details or requested model), the agent mode
and the model id; absent fields are no hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from google.protobuf.message import DecodeError

from glider_cli.protocol.cursor import cursor_pb2 as pb
from glider_cli.protocol.cursor.framing import FrameReader, gunzip
from glider_cli.values import Frozen

Kind = Literal["new_turn", "follow_on", "summary", "subagent", "run_traffic", "passthrough"]
Rpc = Literal["run_sse", "run", "append", "name_agent", "other"]
NAME_TAB = "/aiserver.v1.AiService/NameTab"

_RPCS: dict[str, Rpc] = {
    "/agent.v1.AgentService/RunSSE": "run_sse",
    "/agent.v1.AgentService/Run": "run",
    "/aiserver.v1.BidiService/BidiAppend": "append",
    "/agent.v1.BidiService/BidiAppend": "append",
    "/agent.v1.AgentService/NameAgent": "name_agent",
    "/aiserver.v1.AiService/NameAgent": "name_agent",
    NAME_TAB: "name_agent",
}
_FOLLOW_ON_ACTIONS = frozenset(
    {
        "execute_plan_action",
        "background_task_completion_action",
        "background_shell_action",
        "background_subagent_action",
        "resume_action",
        "async_ask_question_completion_action",
    }
)
PARENT_HEADERS = (
    "x-parent-request-id",
    "x-root-parent-request-id",
    "x-parent-agent-request-id",
    "x-parent-agent-tool-call-id",
)
MODES = {v.number: v.name.removeprefix("AGENT_MODE_").lower() for v in pb.AgentMode.DESCRIPTOR.values}


def rpc(path: str) -> Rpc:
    return _RPCS.get(path.split("?", 1)[0], "other")


class Append(Frozen):
    request_id: str
    seqno: int
    message: bytes | None  # the AgentClientMessage bytes; None when `data` is not hex

    def __init__(self, request_id: str, seqno: int, message: bytes | None) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.request_id = request_id
        s.seqno = seqno
        s.message = message


class Classified(Frozen):
    kind: Kind
    why: str
    conversation_id: str | None
    text: str
    rich_text: bool
    in_run: bool
    mode: str | None
    max_mode: bool | None
    model_id: str | None
    subagent_type: str | None

    def __init__(
        self,
        kind: Kind,
        why: str,
        conversation_id: str | None = None,
        text: str = "",
        rich_text: bool = False,
        in_run: bool = False,
        mode: str | None = None,
        max_mode: bool | None = None,
        model_id: str | None = None,
        subagent_type: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.kind = kind
        s.why = why
        s.conversation_id = conversation_id
        s.text = text
        s.rich_text = rich_text
        s.in_run = in_run
        s.mode = mode
        s.max_mode = max_mode
        s.model_id = model_id
        s.subagent_type = subagent_type

    @property
    def hint(self) -> dict[str, object]:
        """What Cursor said about the turn's weight (`complexity_source: cursor`); empty: no hint."""
        out: dict[str, object] = {}
        if self.max_mode is not None:
            out["max_mode"] = self.max_mode
        if self.mode is not None and self.mode != "unspecified":
            out["mode"] = self.mode
        return out


def _body(body: bytes, encoding: str | None) -> bytes | None:
    if encoding and encoding.strip().lower() == "gzip":
        return gunzip(body)
    return body


def decode_append(body: bytes, encoding: str | None = None) -> Append | None:
    data = _body(body, encoding)
    if data is None:
        return None
    req = pb.BidiAppendRequest()
    try:
        req.ParseFromString(data)
    except DecodeError:
        return None
    if not req.HasField("request_id") or not req.request_id.request_id:
        return None
    message: bytes | None
    if req.data_binary:
        message = req.data_binary
    else:
        try:
            message = bytes.fromhex(req.data)
        except ValueError:
            message = None
    return Append(req.request_id.request_id, req.append_seqno, message)


def run_sse_id(body: bytes, encoding: str | None = None) -> str | None:
    """The request id of a RunSSE request body (one Connect envelope holding a BidiRequestId)."""
    reader = FrameReader()
    for env in reader.feed(body):
        if env.end_stream:
            continue
        payload = gunzip(env.payload) if env.compressed else env.payload
        if payload is None:
            return None
        rid = pb.BidiRequestId()
        try:
            rid.ParseFromString(payload)
        except DecodeError:
            return None
        return rid.request_id or None
    return None


def name_agent_text(body: bytes, encoding: str | None = None) -> str | None:
    data = _body(body, encoding)
    if data is None:
        return None
    req = pb.NameAgentRequest()
    try:
        req.ParseFromString(data)
    except DecodeError:
        return None
    return req.user_message


def title_text(path: str, body: bytes, encoding: str | None = None) -> str | None:
    if path.split("?", 1)[0] != NAME_TAB:
        return name_agent_text(body, encoding)
    data = _body(body, encoding)
    if data is None:
        return None
    req = pb.NameTabRequest()
    try:
        req.ParseFromString(data)
    except DecodeError:
        return None
    human = pb.ConversationMessage.MESSAGE_TYPE_HUMAN
    texts = [m.text for m in req.messages if m.type == human and m.text.strip()]
    return texts[-1] if texts else None


def _from_parent(headers: Mapping[str, str]) -> bool:
    return any(h in headers for h in PARENT_HEADERS)


def classify(message: bytes | None, headers: Mapping[str, str] | None = None) -> Classified:
    """One client message (see the module contract). `headers`: the request's, names lower-case."""
    if message is None:
        return Classified("passthrough", "the append's data is not hex")
    msg = pb.AgentClientMessage()
    try:
        msg.ParseFromString(message)
    except DecodeError:
        return Classified("passthrough", "not an AgentClientMessage")
    which = msg.WhichOneof("message")
    hdrs = headers or {}
    if which == "run_request":
        run = msg.run_request
        cid = run.conversation_id if run.HasField("conversation_id") else None
        max_mode: bool | None = None
        if run.model_details.HasField("max_mode"):
            max_mode = run.model_details.max_mode
        if run.HasField("requested_model") and run.requested_model.max_mode:
            max_mode = True
        model_id = run.requested_model.model_id or run.model_details.model_id or None
        if run.HasField("subagent_type_name") or _from_parent(hdrs):
            why = (
                f"run request with subagent_type_name {run.subagent_type_name!r}"
                if run.HasField("subagent_type_name")
                else "run request with X-Parent-* headers"
            )
            return Classified(
                "subagent",
                why,
                conversation_id=cid,
                text=_user(run.action).text,
                subagent_type=run.subagent_type_name or None,
                model_id=model_id,
                max_mode=max_mode,
            )
        if not run.HasField("action"):
            return Classified("passthrough", "run request with no action", conversation_id=cid)
        return _action(run.action, cid, in_run=False, max_mode=max_mode, model_id=model_id)
    if which == "conversation_action":
        return _action(msg.conversation_action, None, in_run=True, max_mode=None, model_id=None)
    if which in ("exec_client_message", "kv_client_message", "client_heartbeat"):
        return Classified("run_traffic", which)
    if which in ("exec_client_control_message", "interaction_response"):
        return Classified("run_traffic", which)
    if which == "prewarm_request":
        return Classified("passthrough", "prewarm request")
    return Classified("passthrough", "an AgentClientMessage of no known kind")


def _user(action: pb.ConversationAction) -> pb.UserMessage:
    return action.user_message_action.user_message


def _action(
    action: pb.ConversationAction,
    cid: str | None,
    *,
    in_run: bool,
    max_mode: bool | None,
    model_id: str | None,
) -> Classified:
    which = action.WhichOneof("action")
    where = "conversation action" if in_run else "run request"
    if which == "user_message_action":
        um = _user(action)
        mode = MODES.get(um.mode, str(um.mode))
        common = dict(conversation_id=cid, in_run=in_run, mode=mode, max_mode=max_mode, model_id=model_id)
        if um.is_simulated_msg:
            return Classified(
                "follow_on",
                f"{where}: user message with is_simulated_msg (reason {um.simulated_msg_reason})",
                text=um.text,
                **common,  # type: ignore[arg-type]
            )
        if not um.text:
            why = "user message text held in a blob" if um.HasField("text_blob_id") else "empty user message"
            return Classified("passthrough", f"{where}: {why}", **common)  # type: ignore[arg-type]
        return Classified(
            "new_turn",
            f"{where}: user message" + (" with rich_text" if um.HasField("rich_text") else ""),
            text=um.text,
            rich_text=um.HasField("rich_text"),
            **common,  # type: ignore[arg-type]
        )
    if which == "summarize_action":
        return Classified("summary", f"{where}: summarize_action", conversation_id=cid, in_run=in_run)
    if which in _FOLLOW_ON_ACTIONS:
        return Classified("follow_on", f"{where}: {which}", conversation_id=cid, in_run=in_run)
    if which is None:
        return Classified("passthrough", f"{where}: no action", conversation_id=cid, in_run=in_run)
    return Classified("run_traffic", f"{where}: {which}", conversation_id=cid, in_run=in_run)
