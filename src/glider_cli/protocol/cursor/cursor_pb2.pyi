from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_MODE_UNSPECIFIED: _ClassVar[AgentMode]
    AGENT_MODE_AGENT: _ClassVar[AgentMode]
    AGENT_MODE_ASK: _ClassVar[AgentMode]
    AGENT_MODE_PLAN: _ClassVar[AgentMode]
    AGENT_MODE_DEBUG: _ClassVar[AgentMode]
    AGENT_MODE_TRIAGE: _ClassVar[AgentMode]
    AGENT_MODE_PROJECT: _ClassVar[AgentMode]
    AGENT_MODE_MULTITASK: _ClassVar[AgentMode]
AGENT_MODE_UNSPECIFIED: AgentMode
AGENT_MODE_AGENT: AgentMode
AGENT_MODE_ASK: AgentMode
AGENT_MODE_PLAN: AgentMode
AGENT_MODE_DEBUG: AgentMode
AGENT_MODE_TRIAGE: AgentMode
AGENT_MODE_PROJECT: AgentMode
AGENT_MODE_MULTITASK: AgentMode

class BidiRequestId(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class BidiAppendRequest(_message.Message):
    __slots__ = ("data", "request_id", "append_seqno", "data_binary")
    DATA_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    APPEND_SEQNO_FIELD_NUMBER: _ClassVar[int]
    DATA_BINARY_FIELD_NUMBER: _ClassVar[int]
    data: str
    request_id: BidiRequestId
    append_seqno: int
    data_binary: bytes
    def __init__(self, data: _Optional[str] = ..., request_id: _Optional[_Union[BidiRequestId, _Mapping]] = ..., append_seqno: _Optional[int] = ..., data_binary: _Optional[bytes] = ...) -> None: ...

class BidiAppendResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AgentClientMessage(_message.Message):
    __slots__ = ("run_request", "exec_client_message", "kv_client_message", "conversation_action", "exec_client_control_message", "interaction_response", "client_heartbeat", "prewarm_request")
    RUN_REQUEST_FIELD_NUMBER: _ClassVar[int]
    EXEC_CLIENT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KV_CLIENT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ACTION_FIELD_NUMBER: _ClassVar[int]
    EXEC_CLIENT_CONTROL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    PREWARM_REQUEST_FIELD_NUMBER: _ClassVar[int]
    run_request: AgentRunRequest
    exec_client_message: ExecClientMessage
    kv_client_message: KvClientMessage
    conversation_action: ConversationAction
    exec_client_control_message: ExecClientControlMessage
    interaction_response: InteractionResponse
    client_heartbeat: ClientHeartbeat
    prewarm_request: PrewarmRequest
    def __init__(self, run_request: _Optional[_Union[AgentRunRequest, _Mapping]] = ..., exec_client_message: _Optional[_Union[ExecClientMessage, _Mapping]] = ..., kv_client_message: _Optional[_Union[KvClientMessage, _Mapping]] = ..., conversation_action: _Optional[_Union[ConversationAction, _Mapping]] = ..., exec_client_control_message: _Optional[_Union[ExecClientControlMessage, _Mapping]] = ..., interaction_response: _Optional[_Union[InteractionResponse, _Mapping]] = ..., client_heartbeat: _Optional[_Union[ClientHeartbeat, _Mapping]] = ..., prewarm_request: _Optional[_Union[PrewarmRequest, _Mapping]] = ...) -> None: ...

class AgentRunRequest(_message.Message):
    __slots__ = ("action", "model_details", "conversation_id", "requested_model", "subagent_type_name", "conversation_group_id")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    MODEL_DETAILS_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    action: ConversationAction
    model_details: ModelDetails
    conversation_id: str
    requested_model: RequestedModel
    subagent_type_name: str
    conversation_group_id: str
    def __init__(self, action: _Optional[_Union[ConversationAction, _Mapping]] = ..., model_details: _Optional[_Union[ModelDetails, _Mapping]] = ..., conversation_id: _Optional[str] = ..., requested_model: _Optional[_Union[RequestedModel, _Mapping]] = ..., subagent_type_name: _Optional[str] = ..., conversation_group_id: _Optional[str] = ...) -> None: ...

class ModelDetails(_message.Message):
    __slots__ = ("model_id", "max_mode")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_MODE_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    max_mode: bool
    def __init__(self, model_id: _Optional[str] = ..., max_mode: _Optional[bool] = ...) -> None: ...

class RequestedModel(_message.Message):
    __slots__ = ("model_id", "max_mode")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_MODE_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    max_mode: bool
    def __init__(self, model_id: _Optional[str] = ..., max_mode: _Optional[bool] = ...) -> None: ...

class ConversationAction(_message.Message):
    __slots__ = ("user_message_action", "resume_action", "cancel_action", "summarize_action", "shell_command_action", "start_plan_action", "execute_plan_action", "async_ask_question_completion_action", "cancel_subagent_action", "background_task_completion_action", "background_shell_action", "background_subagent_action")
    USER_MESSAGE_ACTION_FIELD_NUMBER: _ClassVar[int]
    RESUME_ACTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_ACTION_FIELD_NUMBER: _ClassVar[int]
    SUMMARIZE_ACTION_FIELD_NUMBER: _ClassVar[int]
    SHELL_COMMAND_ACTION_FIELD_NUMBER: _ClassVar[int]
    START_PLAN_ACTION_FIELD_NUMBER: _ClassVar[int]
    EXECUTE_PLAN_ACTION_FIELD_NUMBER: _ClassVar[int]
    ASYNC_ASK_QUESTION_COMPLETION_ACTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_SUBAGENT_ACTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_TASK_COMPLETION_ACTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_SHELL_ACTION_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_SUBAGENT_ACTION_FIELD_NUMBER: _ClassVar[int]
    user_message_action: UserMessageAction
    resume_action: ResumeAction
    cancel_action: CancelAction
    summarize_action: SummarizeAction
    shell_command_action: ShellCommandAction
    start_plan_action: StartPlanAction
    execute_plan_action: ExecutePlanAction
    async_ask_question_completion_action: AsyncAskQuestionCompletionAction
    cancel_subagent_action: CancelSubagentAction
    background_task_completion_action: BackgroundTaskCompletionAction
    background_shell_action: BackgroundShellAction
    background_subagent_action: BackgroundSubagentAction
    def __init__(self, user_message_action: _Optional[_Union[UserMessageAction, _Mapping]] = ..., resume_action: _Optional[_Union[ResumeAction, _Mapping]] = ..., cancel_action: _Optional[_Union[CancelAction, _Mapping]] = ..., summarize_action: _Optional[_Union[SummarizeAction, _Mapping]] = ..., shell_command_action: _Optional[_Union[ShellCommandAction, _Mapping]] = ..., start_plan_action: _Optional[_Union[StartPlanAction, _Mapping]] = ..., execute_plan_action: _Optional[_Union[ExecutePlanAction, _Mapping]] = ..., async_ask_question_completion_action: _Optional[_Union[AsyncAskQuestionCompletionAction, _Mapping]] = ..., cancel_subagent_action: _Optional[_Union[CancelSubagentAction, _Mapping]] = ..., background_task_completion_action: _Optional[_Union[BackgroundTaskCompletionAction, _Mapping]] = ..., background_shell_action: _Optional[_Union[BackgroundShellAction, _Mapping]] = ..., background_subagent_action: _Optional[_Union[BackgroundSubagentAction, _Mapping]] = ...) -> None: ...

class UserMessageAction(_message.Message):
    __slots__ = ("user_message",)
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    user_message: UserMessage
    def __init__(self, user_message: _Optional[_Union[UserMessage, _Mapping]] = ...) -> None: ...

class UserMessage(_message.Message):
    __slots__ = ("text", "message_id", "mode", "is_simulated_msg", "rich_text", "simulated_msg_reason", "text_blob_id", "rich_text_blob_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    IS_SIMULATED_MSG_FIELD_NUMBER: _ClassVar[int]
    RICH_TEXT_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_MSG_REASON_FIELD_NUMBER: _ClassVar[int]
    TEXT_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    RICH_TEXT_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    message_id: str
    mode: AgentMode
    is_simulated_msg: bool
    rich_text: str
    simulated_msg_reason: int
    text_blob_id: bytes
    rich_text_blob_id: bytes
    def __init__(self, text: _Optional[str] = ..., message_id: _Optional[str] = ..., mode: _Optional[_Union[AgentMode, str]] = ..., is_simulated_msg: _Optional[bool] = ..., rich_text: _Optional[str] = ..., simulated_msg_reason: _Optional[int] = ..., text_blob_id: _Optional[bytes] = ..., rich_text_blob_id: _Optional[bytes] = ...) -> None: ...

class ResumeAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SummarizeAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShellCommandAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartPlanAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecutePlanAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AsyncAskQuestionCompletionAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelSubagentAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BackgroundTaskCompletionAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BackgroundShellAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BackgroundSubagentAction(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecClientMessage(_message.Message):
    __slots__ = ("id", "exec_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ...) -> None: ...

class KvClientMessage(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ExecClientControlMessage(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InteractionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClientHeartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PrewarmRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AgentServerMessage(_message.Message):
    __slots__ = ("interaction_update", "exec_server_message", "kv_server_message")
    INTERACTION_UPDATE_FIELD_NUMBER: _ClassVar[int]
    EXEC_SERVER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KV_SERVER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    interaction_update: InteractionUpdate
    exec_server_message: ExecServerMessage
    kv_server_message: KvServerMessage
    def __init__(self, interaction_update: _Optional[_Union[InteractionUpdate, _Mapping]] = ..., exec_server_message: _Optional[_Union[ExecServerMessage, _Mapping]] = ..., kv_server_message: _Optional[_Union[KvServerMessage, _Mapping]] = ...) -> None: ...

class ExecServerMessage(_message.Message):
    __slots__ = ("id", "exec_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ...) -> None: ...

class KvServerMessage(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class InteractionUpdate(_message.Message):
    __slots__ = ("text_delta", "thinking_delta", "token_delta", "summary_started", "summary_completed", "heartbeat", "turn_ended")
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    THINKING_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOKEN_DELTA_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_STARTED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    text_delta: TextDeltaUpdate
    thinking_delta: ThinkingDeltaUpdate
    token_delta: TokenDeltaUpdate
    summary_started: SummaryStartedUpdate
    summary_completed: SummaryCompletedUpdate
    heartbeat: HeartbeatUpdate
    turn_ended: TurnEndedUpdate
    def __init__(self, text_delta: _Optional[_Union[TextDeltaUpdate, _Mapping]] = ..., thinking_delta: _Optional[_Union[ThinkingDeltaUpdate, _Mapping]] = ..., token_delta: _Optional[_Union[TokenDeltaUpdate, _Mapping]] = ..., summary_started: _Optional[_Union[SummaryStartedUpdate, _Mapping]] = ..., summary_completed: _Optional[_Union[SummaryCompletedUpdate, _Mapping]] = ..., heartbeat: _Optional[_Union[HeartbeatUpdate, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEndedUpdate, _Mapping]] = ...) -> None: ...

class TextDeltaUpdate(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ThinkingDeltaUpdate(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class TokenDeltaUpdate(_message.Message):
    __slots__ = ("tokens",)
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    tokens: int
    def __init__(self, tokens: _Optional[int] = ...) -> None: ...

class SummaryStartedUpdate(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SummaryCompletedUpdate(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HeartbeatUpdate(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TurnEndedUpdate(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ...) -> None: ...

class NameAgentRequest(_message.Message):
    __slots__ = ("user_message",)
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    user_message: str
    def __init__(self, user_message: _Optional[str] = ...) -> None: ...

class NameAgentResponse(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...
