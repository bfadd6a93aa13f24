from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
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

class ShellAbortReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHELL_ABORT_REASON_UNSPECIFIED: _ClassVar[ShellAbortReason]
    SHELL_ABORT_REASON_USER_ABORT: _ClassVar[ShellAbortReason]
    SHELL_ABORT_REASON_TIMEOUT: _ClassVar[ShellAbortReason]
AGENT_MODE_UNSPECIFIED: AgentMode
AGENT_MODE_AGENT: AgentMode
AGENT_MODE_ASK: AgentMode
AGENT_MODE_PLAN: AgentMode
AGENT_MODE_DEBUG: AgentMode
AGENT_MODE_TRIAGE: AgentMode
AGENT_MODE_PROJECT: AgentMode
AGENT_MODE_MULTITASK: AgentMode
SHELL_ABORT_REASON_UNSPECIFIED: ShellAbortReason
SHELL_ABORT_REASON_USER_ABORT: ShellAbortReason
SHELL_ABORT_REASON_TIMEOUT: ShellAbortReason

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
    __slots__ = ("id", "exec_id", "shell_result", "write_result", "delete_result", "grep_result", "read_result", "ls_result", "shell_stream")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    SHELL_RESULT_FIELD_NUMBER: _ClassVar[int]
    WRITE_RESULT_FIELD_NUMBER: _ClassVar[int]
    DELETE_RESULT_FIELD_NUMBER: _ClassVar[int]
    GREP_RESULT_FIELD_NUMBER: _ClassVar[int]
    READ_RESULT_FIELD_NUMBER: _ClassVar[int]
    LS_RESULT_FIELD_NUMBER: _ClassVar[int]
    SHELL_STREAM_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    shell_result: ShellResult
    write_result: WriteResult
    delete_result: DeleteResult
    grep_result: GrepResult
    read_result: ReadResult
    ls_result: LsResult
    shell_stream: ShellStream
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ..., shell_result: _Optional[_Union[ShellResult, _Mapping]] = ..., write_result: _Optional[_Union[WriteResult, _Mapping]] = ..., delete_result: _Optional[_Union[DeleteResult, _Mapping]] = ..., grep_result: _Optional[_Union[GrepResult, _Mapping]] = ..., read_result: _Optional[_Union[ReadResult, _Mapping]] = ..., ls_result: _Optional[_Union[LsResult, _Mapping]] = ..., shell_stream: _Optional[_Union[ShellStream, _Mapping]] = ...) -> None: ...

class KvClientMessage(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ExecClientControlMessage(_message.Message):
    __slots__ = ("stream_close", "throw", "heartbeat")
    STREAM_CLOSE_FIELD_NUMBER: _ClassVar[int]
    THROW_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    stream_close: ExecClientStreamClose
    throw: ExecClientThrow
    heartbeat: ExecClientHeartbeat
    def __init__(self, stream_close: _Optional[_Union[ExecClientStreamClose, _Mapping]] = ..., throw: _Optional[_Union[ExecClientThrow, _Mapping]] = ..., heartbeat: _Optional[_Union[ExecClientHeartbeat, _Mapping]] = ...) -> None: ...

class ExecClientStreamClose(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ExecClientThrow(_message.Message):
    __slots__ = ("id", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: int
    error: str
    def __init__(self, id: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class ExecClientHeartbeat(_message.Message):
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
    __slots__ = ("interaction_update", "exec_server_message", "kv_server_message", "exec_server_control_message")
    INTERACTION_UPDATE_FIELD_NUMBER: _ClassVar[int]
    EXEC_SERVER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KV_SERVER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXEC_SERVER_CONTROL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    interaction_update: InteractionUpdate
    exec_server_message: ExecServerMessage
    kv_server_message: KvServerMessage
    exec_server_control_message: ExecServerControlMessage
    def __init__(self, interaction_update: _Optional[_Union[InteractionUpdate, _Mapping]] = ..., exec_server_message: _Optional[_Union[ExecServerMessage, _Mapping]] = ..., kv_server_message: _Optional[_Union[KvServerMessage, _Mapping]] = ..., exec_server_control_message: _Optional[_Union[ExecServerControlMessage, _Mapping]] = ...) -> None: ...

class ExecServerMessage(_message.Message):
    __slots__ = ("id", "exec_id", "shell_args", "write_args", "delete_args", "grep_args", "read_args", "ls_args", "mcp_args", "shell_stream_args", "background_shell_spawn_args", "fetch_args", "subagent_args", "redacted_read_args")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_ID_FIELD_NUMBER: _ClassVar[int]
    SHELL_ARGS_FIELD_NUMBER: _ClassVar[int]
    WRITE_ARGS_FIELD_NUMBER: _ClassVar[int]
    DELETE_ARGS_FIELD_NUMBER: _ClassVar[int]
    GREP_ARGS_FIELD_NUMBER: _ClassVar[int]
    READ_ARGS_FIELD_NUMBER: _ClassVar[int]
    LS_ARGS_FIELD_NUMBER: _ClassVar[int]
    MCP_ARGS_FIELD_NUMBER: _ClassVar[int]
    SHELL_STREAM_ARGS_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_SHELL_SPAWN_ARGS_FIELD_NUMBER: _ClassVar[int]
    FETCH_ARGS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ARGS_FIELD_NUMBER: _ClassVar[int]
    REDACTED_READ_ARGS_FIELD_NUMBER: _ClassVar[int]
    id: int
    exec_id: str
    shell_args: ShellArgs
    write_args: WriteArgs
    delete_args: DeleteArgs
    grep_args: GrepArgs
    read_args: ReadArgs
    ls_args: LsArgs
    mcp_args: Opaque
    shell_stream_args: ShellArgs
    background_shell_spawn_args: Opaque
    fetch_args: Opaque
    subagent_args: Opaque
    redacted_read_args: ReadArgs
    def __init__(self, id: _Optional[int] = ..., exec_id: _Optional[str] = ..., shell_args: _Optional[_Union[ShellArgs, _Mapping]] = ..., write_args: _Optional[_Union[WriteArgs, _Mapping]] = ..., delete_args: _Optional[_Union[DeleteArgs, _Mapping]] = ..., grep_args: _Optional[_Union[GrepArgs, _Mapping]] = ..., read_args: _Optional[_Union[ReadArgs, _Mapping]] = ..., ls_args: _Optional[_Union[LsArgs, _Mapping]] = ..., mcp_args: _Optional[_Union[Opaque, _Mapping]] = ..., shell_stream_args: _Optional[_Union[ShellArgs, _Mapping]] = ..., background_shell_spawn_args: _Optional[_Union[Opaque, _Mapping]] = ..., fetch_args: _Optional[_Union[Opaque, _Mapping]] = ..., subagent_args: _Optional[_Union[Opaque, _Mapping]] = ..., redacted_read_args: _Optional[_Union[ReadArgs, _Mapping]] = ...) -> None: ...

class ReadArgs(_message.Message):
    __slots__ = ("path", "tool_call_id", "offset", "limit", "encoding_hint")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ENCODING_HINT_FIELD_NUMBER: _ClassVar[int]
    path: str
    tool_call_id: str
    offset: int
    limit: int
    encoding_hint: str
    def __init__(self, path: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ..., encoding_hint: _Optional[str] = ...) -> None: ...

class ReadResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "file_not_found", "permission_denied", "invalid_file")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    INVALID_FILE_FIELD_NUMBER: _ClassVar[int]
    success: ReadSuccess
    error: PathError
    rejected: Opaque
    file_not_found: PathOnly
    permission_denied: Opaque
    invalid_file: Opaque
    def __init__(self, success: _Optional[_Union[ReadSuccess, _Mapping]] = ..., error: _Optional[_Union[PathError, _Mapping]] = ..., rejected: _Optional[_Union[Opaque, _Mapping]] = ..., file_not_found: _Optional[_Union[PathOnly, _Mapping]] = ..., permission_denied: _Optional[_Union[Opaque, _Mapping]] = ..., invalid_file: _Optional[_Union[Opaque, _Mapping]] = ...) -> None: ...

class ReadSuccess(_message.Message):
    __slots__ = ("path", "total_lines", "file_size", "truncated", "output_blob_id", "range_applied", "content", "data")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    RANGE_APPLIED_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    path: str
    total_lines: int
    file_size: int
    truncated: bool
    output_blob_id: bytes
    range_applied: bool
    content: str
    data: bytes
    def __init__(self, path: _Optional[str] = ..., total_lines: _Optional[int] = ..., file_size: _Optional[int] = ..., truncated: _Optional[bool] = ..., output_blob_id: _Optional[bytes] = ..., range_applied: _Optional[bool] = ..., content: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class PathError(_message.Message):
    __slots__ = ("path", "error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class PathOnly(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class Opaque(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WriteArgs(_message.Message):
    __slots__ = ("path", "file_text", "tool_call_id", "return_file_content_after_write", "file_bytes", "encoding_hint")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILE_TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RETURN_FILE_CONTENT_AFTER_WRITE_FIELD_NUMBER: _ClassVar[int]
    FILE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ENCODING_HINT_FIELD_NUMBER: _ClassVar[int]
    path: str
    file_text: str
    tool_call_id: str
    return_file_content_after_write: bool
    file_bytes: bytes
    encoding_hint: str
    def __init__(self, path: _Optional[str] = ..., file_text: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., return_file_content_after_write: _Optional[bool] = ..., file_bytes: _Optional[bytes] = ..., encoding_hint: _Optional[str] = ...) -> None: ...

class WriteResult(_message.Message):
    __slots__ = ("success", "permission_denied", "no_space", "error", "rejected")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    NO_SPACE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    success: WriteSuccess
    permission_denied: Opaque
    no_space: Opaque
    error: PathError
    rejected: Opaque
    def __init__(self, success: _Optional[_Union[WriteSuccess, _Mapping]] = ..., permission_denied: _Optional[_Union[Opaque, _Mapping]] = ..., no_space: _Optional[_Union[Opaque, _Mapping]] = ..., error: _Optional[_Union[PathError, _Mapping]] = ..., rejected: _Optional[_Union[Opaque, _Mapping]] = ...) -> None: ...

class WriteSuccess(_message.Message):
    __slots__ = ("path", "lines_created", "file_size", "file_content_after_write")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINES_CREATED_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    FILE_CONTENT_AFTER_WRITE_FIELD_NUMBER: _ClassVar[int]
    path: str
    lines_created: int
    file_size: int
    file_content_after_write: str
    def __init__(self, path: _Optional[str] = ..., lines_created: _Optional[int] = ..., file_size: _Optional[int] = ..., file_content_after_write: _Optional[str] = ...) -> None: ...

class DeleteArgs(_message.Message):
    __slots__ = ("path", "tool_call_id")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    tool_call_id: str
    def __init__(self, path: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class DeleteResult(_message.Message):
    __slots__ = ("success", "file_not_found", "not_file", "permission_denied", "file_busy", "rejected", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    NOT_FILE_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    FILE_BUSY_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: Opaque
    file_not_found: Opaque
    not_file: Opaque
    permission_denied: Opaque
    file_busy: Opaque
    rejected: Opaque
    error: Opaque
    def __init__(self, success: _Optional[_Union[Opaque, _Mapping]] = ..., file_not_found: _Optional[_Union[Opaque, _Mapping]] = ..., not_file: _Optional[_Union[Opaque, _Mapping]] = ..., permission_denied: _Optional[_Union[Opaque, _Mapping]] = ..., file_busy: _Optional[_Union[Opaque, _Mapping]] = ..., rejected: _Optional[_Union[Opaque, _Mapping]] = ..., error: _Optional[_Union[Opaque, _Mapping]] = ...) -> None: ...

class GrepArgs(_message.Message):
    __slots__ = ("pattern", "path", "glob", "output_mode", "context_before", "context_after", "context", "case_insensitive", "type", "head_limit", "multiline", "sort", "sort_ascending", "tool_call_id", "offset")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    GLOB_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_AFTER_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CASE_INSENSITIVE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MULTILINE_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    SORT_ASCENDING_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    glob: str
    output_mode: str
    context_before: int
    context_after: int
    context: int
    case_insensitive: bool
    type: str
    head_limit: int
    multiline: bool
    sort: str
    sort_ascending: bool
    tool_call_id: str
    offset: int
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., glob: _Optional[str] = ..., output_mode: _Optional[str] = ..., context_before: _Optional[int] = ..., context_after: _Optional[int] = ..., context: _Optional[int] = ..., case_insensitive: _Optional[bool] = ..., type: _Optional[str] = ..., head_limit: _Optional[int] = ..., multiline: _Optional[bool] = ..., sort: _Optional[str] = ..., sort_ascending: _Optional[bool] = ..., tool_call_id: _Optional[str] = ..., offset: _Optional[int] = ...) -> None: ...

class GrepResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: GrepSuccess
    error: GrepError
    def __init__(self, success: _Optional[_Union[GrepSuccess, _Mapping]] = ..., error: _Optional[_Union[GrepError, _Mapping]] = ...) -> None: ...

class GrepSuccess(_message.Message):
    __slots__ = ("pattern", "path", "output_mode", "workspace_results", "active_editor_result")
    class WorkspaceResultsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: GrepUnionResult
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[GrepUnionResult, _Mapping]] = ...) -> None: ...
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_RESULTS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_EDITOR_RESULT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    output_mode: str
    workspace_results: _containers.MessageMap[str, GrepUnionResult]
    active_editor_result: GrepUnionResult
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., output_mode: _Optional[str] = ..., workspace_results: _Optional[_Mapping[str, GrepUnionResult]] = ..., active_editor_result: _Optional[_Union[GrepUnionResult, _Mapping]] = ...) -> None: ...

class GrepError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class GrepUnionResult(_message.Message):
    __slots__ = ("count", "files", "content")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    count: GrepCountResult
    files: GrepFilesResult
    content: GrepContentResult
    def __init__(self, count: _Optional[_Union[GrepCountResult, _Mapping]] = ..., files: _Optional[_Union[GrepFilesResult, _Mapping]] = ..., content: _Optional[_Union[GrepContentResult, _Mapping]] = ...) -> None: ...

class GrepCountResult(_message.Message):
    __slots__ = ("counts", "total_files", "total_matches", "client_truncated", "ripgrep_truncated")
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MATCHES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    counts: _containers.RepeatedCompositeFieldContainer[GrepFileCount]
    total_files: int
    total_matches: int
    client_truncated: bool
    ripgrep_truncated: bool
    def __init__(self, counts: _Optional[_Iterable[_Union[GrepFileCount, _Mapping]]] = ..., total_files: _Optional[int] = ..., total_matches: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ...) -> None: ...

class GrepFileCount(_message.Message):
    __slots__ = ("file", "count")
    FILE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    file: str
    count: int
    def __init__(self, file: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class GrepFilesResult(_message.Message):
    __slots__ = ("files", "total_files", "client_truncated", "ripgrep_truncated")
    FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedScalarFieldContainer[str]
    total_files: int
    client_truncated: bool
    ripgrep_truncated: bool
    def __init__(self, files: _Optional[_Iterable[str]] = ..., total_files: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ...) -> None: ...

class GrepContentResult(_message.Message):
    __slots__ = ("matches", "total_lines", "total_matched_lines", "client_truncated", "ripgrep_truncated")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MATCHED_LINES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[GrepFileMatch]
    total_lines: int
    total_matched_lines: int
    client_truncated: bool
    ripgrep_truncated: bool
    def __init__(self, matches: _Optional[_Iterable[_Union[GrepFileMatch, _Mapping]]] = ..., total_lines: _Optional[int] = ..., total_matched_lines: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ...) -> None: ...

class GrepFileMatch(_message.Message):
    __slots__ = ("file", "matches")
    FILE_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    file: str
    matches: _containers.RepeatedCompositeFieldContainer[GrepContentMatch]
    def __init__(self, file: _Optional[str] = ..., matches: _Optional[_Iterable[_Union[GrepContentMatch, _Mapping]]] = ...) -> None: ...

class GrepContentMatch(_message.Message):
    __slots__ = ("line_number", "content", "content_truncated", "is_context_line")
    LINE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    IS_CONTEXT_LINE_FIELD_NUMBER: _ClassVar[int]
    line_number: int
    content: str
    content_truncated: bool
    is_context_line: bool
    def __init__(self, line_number: _Optional[int] = ..., content: _Optional[str] = ..., content_truncated: _Optional[bool] = ..., is_context_line: _Optional[bool] = ...) -> None: ...

class LsArgs(_message.Message):
    __slots__ = ("path", "ignore", "tool_call_id", "timeout_ms")
    PATH_FIELD_NUMBER: _ClassVar[int]
    IGNORE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    path: str
    ignore: _containers.RepeatedScalarFieldContainer[str]
    tool_call_id: str
    timeout_ms: int
    def __init__(self, path: _Optional[str] = ..., ignore: _Optional[_Iterable[str]] = ..., tool_call_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class LsResult(_message.Message):
    __slots__ = ("success", "error", "rejected", "timeout")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    success: LsSuccess
    error: PathError
    rejected: Opaque
    timeout: Opaque
    def __init__(self, success: _Optional[_Union[LsSuccess, _Mapping]] = ..., error: _Optional[_Union[PathError, _Mapping]] = ..., rejected: _Optional[_Union[Opaque, _Mapping]] = ..., timeout: _Optional[_Union[Opaque, _Mapping]] = ...) -> None: ...

class LsSuccess(_message.Message):
    __slots__ = ("directory_tree_root",)
    DIRECTORY_TREE_ROOT_FIELD_NUMBER: _ClassVar[int]
    directory_tree_root: LsDirectoryTreeNode
    def __init__(self, directory_tree_root: _Optional[_Union[LsDirectoryTreeNode, _Mapping]] = ...) -> None: ...

class LsDirectoryTreeNode(_message.Message):
    __slots__ = ("abs_path", "children_dirs", "children_files", "children_were_processed", "num_files")
    ABS_PATH_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_DIRS_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FILES_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_WERE_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    NUM_FILES_FIELD_NUMBER: _ClassVar[int]
    abs_path: str
    children_dirs: _containers.RepeatedCompositeFieldContainer[LsDirectoryTreeNode]
    children_files: _containers.RepeatedCompositeFieldContainer[LsFile]
    children_were_processed: bool
    num_files: int
    def __init__(self, abs_path: _Optional[str] = ..., children_dirs: _Optional[_Iterable[_Union[LsDirectoryTreeNode, _Mapping]]] = ..., children_files: _Optional[_Iterable[_Union[LsFile, _Mapping]]] = ..., children_were_processed: _Optional[bool] = ..., num_files: _Optional[int] = ...) -> None: ...

class LsFile(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ShellArgs(_message.Message):
    __slots__ = ("command", "working_directory", "timeout", "tool_call_id", "simple_commands", "is_background", "skip_approval", "description", "conversation_id")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SIMPLE_COMMANDS_FIELD_NUMBER: _ClassVar[int]
    IS_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    SKIP_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    timeout: int
    tool_call_id: str
    simple_commands: _containers.RepeatedScalarFieldContainer[str]
    is_background: bool
    skip_approval: bool
    description: str
    conversation_id: str
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., timeout: _Optional[int] = ..., tool_call_id: _Optional[str] = ..., simple_commands: _Optional[_Iterable[str]] = ..., is_background: _Optional[bool] = ..., skip_approval: _Optional[bool] = ..., description: _Optional[str] = ..., conversation_id: _Optional[str] = ...) -> None: ...

class ShellResult(_message.Message):
    __slots__ = ("success", "failure", "timeout", "rejected", "spawn_error", "permission_denied", "is_background")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    SPAWN_ERROR_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    IS_BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    success: ShellSuccess
    failure: ShellFailure
    timeout: ShellTimeout
    rejected: ShellRejected
    spawn_error: ShellSpawnError
    permission_denied: ShellPermissionDenied
    is_background: bool
    def __init__(self, success: _Optional[_Union[ShellSuccess, _Mapping]] = ..., failure: _Optional[_Union[ShellFailure, _Mapping]] = ..., timeout: _Optional[_Union[ShellTimeout, _Mapping]] = ..., rejected: _Optional[_Union[ShellRejected, _Mapping]] = ..., spawn_error: _Optional[_Union[ShellSpawnError, _Mapping]] = ..., permission_denied: _Optional[_Union[ShellPermissionDenied, _Mapping]] = ..., is_background: _Optional[bool] = ...) -> None: ...

class ShellSuccess(_message.Message):
    __slots__ = ("command", "working_directory", "exit_code", "signal", "stdout", "stderr", "execution_time")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    exit_code: int
    signal: str
    stdout: str
    stderr: str
    execution_time: int
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., exit_code: _Optional[int] = ..., signal: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., execution_time: _Optional[int] = ...) -> None: ...

class ShellFailure(_message.Message):
    __slots__ = ("command", "working_directory", "exit_code", "signal", "stdout", "stderr", "execution_time", "abort_reason", "aborted")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_FIELD_NUMBER: _ClassVar[int]
    ABORT_REASON_FIELD_NUMBER: _ClassVar[int]
    ABORTED_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    exit_code: int
    signal: str
    stdout: str
    stderr: str
    execution_time: int
    abort_reason: ShellAbortReason
    aborted: bool
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., exit_code: _Optional[int] = ..., signal: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., execution_time: _Optional[int] = ..., abort_reason: _Optional[_Union[ShellAbortReason, str]] = ..., aborted: _Optional[bool] = ...) -> None: ...

class ShellTimeout(_message.Message):
    __slots__ = ("command", "working_directory", "timeout_ms")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    timeout_ms: int
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ShellRejected(_message.Message):
    __slots__ = ("command", "working_directory", "reason", "is_readonly")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    reason: str
    is_readonly: bool
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., reason: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class ShellSpawnError(_message.Message):
    __slots__ = ("command", "working_directory", "error")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    error: str
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ShellPermissionDenied(_message.Message):
    __slots__ = ("command", "working_directory", "error", "is_readonly")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    command: str
    working_directory: str
    error: str
    is_readonly: bool
    def __init__(self, command: _Optional[str] = ..., working_directory: _Optional[str] = ..., error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class ShellStream(_message.Message):
    __slots__ = ("stdout", "stderr", "exit", "start", "rejected", "permission_denied", "backgrounded")
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    BACKGROUNDED_FIELD_NUMBER: _ClassVar[int]
    stdout: ShellStreamStdout
    stderr: ShellStreamStderr
    exit: ShellStreamExit
    start: ShellStreamStart
    rejected: ShellRejected
    permission_denied: ShellPermissionDenied
    backgrounded: Opaque
    def __init__(self, stdout: _Optional[_Union[ShellStreamStdout, _Mapping]] = ..., stderr: _Optional[_Union[ShellStreamStderr, _Mapping]] = ..., exit: _Optional[_Union[ShellStreamExit, _Mapping]] = ..., start: _Optional[_Union[ShellStreamStart, _Mapping]] = ..., rejected: _Optional[_Union[ShellRejected, _Mapping]] = ..., permission_denied: _Optional[_Union[ShellPermissionDenied, _Mapping]] = ..., backgrounded: _Optional[_Union[Opaque, _Mapping]] = ...) -> None: ...

class ShellStreamStdout(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: str
    def __init__(self, data: _Optional[str] = ...) -> None: ...

class ShellStreamStderr(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: str
    def __init__(self, data: _Optional[str] = ...) -> None: ...

class ShellStreamExit(_message.Message):
    __slots__ = ("code", "cwd", "aborted", "abort_reason")
    CODE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ABORTED_FIELD_NUMBER: _ClassVar[int]
    ABORT_REASON_FIELD_NUMBER: _ClassVar[int]
    code: int
    cwd: str
    aborted: bool
    abort_reason: ShellAbortReason
    def __init__(self, code: _Optional[int] = ..., cwd: _Optional[str] = ..., aborted: _Optional[bool] = ..., abort_reason: _Optional[_Union[ShellAbortReason, str]] = ...) -> None: ...

class ShellStreamStart(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("shell_tool_call", "delete_tool_call", "glob_tool_call", "grep_tool_call", "read_tool_call", "edit_tool_call", "ls_tool_call")
    SHELL_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    DELETE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    GLOB_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    GREP_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    READ_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    EDIT_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    LS_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    shell_tool_call: ShellToolCall
    delete_tool_call: DeleteToolCall
    glob_tool_call: GlobToolCall
    grep_tool_call: GrepToolCall
    read_tool_call: ReadToolCall
    edit_tool_call: EditToolCall
    ls_tool_call: LsToolCall
    def __init__(self, shell_tool_call: _Optional[_Union[ShellToolCall, _Mapping]] = ..., delete_tool_call: _Optional[_Union[DeleteToolCall, _Mapping]] = ..., glob_tool_call: _Optional[_Union[GlobToolCall, _Mapping]] = ..., grep_tool_call: _Optional[_Union[GrepToolCall, _Mapping]] = ..., read_tool_call: _Optional[_Union[ReadToolCall, _Mapping]] = ..., edit_tool_call: _Optional[_Union[EditToolCall, _Mapping]] = ..., ls_tool_call: _Optional[_Union[LsToolCall, _Mapping]] = ...) -> None: ...

class ShellToolCall(_message.Message):
    __slots__ = ("args", "result", "description")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    args: ShellArgs
    result: ShellResult
    description: str
    def __init__(self, args: _Optional[_Union[ShellArgs, _Mapping]] = ..., result: _Optional[_Union[ShellResult, _Mapping]] = ..., description: _Optional[str] = ...) -> None: ...

class DeleteToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: DeleteArgs
    result: DeleteResult
    def __init__(self, args: _Optional[_Union[DeleteArgs, _Mapping]] = ..., result: _Optional[_Union[DeleteResult, _Mapping]] = ...) -> None: ...

class GrepToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: GrepArgs
    result: GrepResult
    def __init__(self, args: _Optional[_Union[GrepArgs, _Mapping]] = ..., result: _Optional[_Union[GrepResult, _Mapping]] = ...) -> None: ...

class LsToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: LsArgs
    result: LsResult
    def __init__(self, args: _Optional[_Union[LsArgs, _Mapping]] = ..., result: _Optional[_Union[LsResult, _Mapping]] = ...) -> None: ...

class ReadToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: ReadToolArgs
    result: ReadToolResult
    def __init__(self, args: _Optional[_Union[ReadToolArgs, _Mapping]] = ..., result: _Optional[_Union[ReadToolResult, _Mapping]] = ...) -> None: ...

class ReadToolArgs(_message.Message):
    __slots__ = ("path", "offset", "limit", "include_line_numbers")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_LINE_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    path: str
    offset: int
    limit: int
    include_line_numbers: bool
    def __init__(self, path: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ..., include_line_numbers: _Optional[bool] = ...) -> None: ...

class ReadToolResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: ReadToolSuccess
    error: ReadToolError
    def __init__(self, success: _Optional[_Union[ReadToolSuccess, _Mapping]] = ..., error: _Optional[_Union[ReadToolError, _Mapping]] = ...) -> None: ...

class ReadToolSuccess(_message.Message):
    __slots__ = ("content", "data", "data_blob_id", "content_blob_id", "is_empty", "exceeded_limit", "total_lines", "file_size", "path", "read_range", "include_line_numbers", "related_cursor_rule_paths")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DATA_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_BLOB_ID_FIELD_NUMBER: _ClassVar[int]
    IS_EMPTY_FIELD_NUMBER: _ClassVar[int]
    EXCEEDED_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    READ_RANGE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_LINE_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    RELATED_CURSOR_RULE_PATHS_FIELD_NUMBER: _ClassVar[int]
    content: str
    data: bytes
    data_blob_id: bytes
    content_blob_id: bytes
    is_empty: bool
    exceeded_limit: bool
    total_lines: int
    file_size: int
    path: str
    read_range: ReadRange
    include_line_numbers: bool
    related_cursor_rule_paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, content: _Optional[str] = ..., data: _Optional[bytes] = ..., data_blob_id: _Optional[bytes] = ..., content_blob_id: _Optional[bytes] = ..., is_empty: _Optional[bool] = ..., exceeded_limit: _Optional[bool] = ..., total_lines: _Optional[int] = ..., file_size: _Optional[int] = ..., path: _Optional[str] = ..., read_range: _Optional[_Union[ReadRange, _Mapping]] = ..., include_line_numbers: _Optional[bool] = ..., related_cursor_rule_paths: _Optional[_Iterable[str]] = ...) -> None: ...

class ReadRange(_message.Message):
    __slots__ = ("start_line", "end_line")
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    start_line: int
    end_line: int
    def __init__(self, start_line: _Optional[int] = ..., end_line: _Optional[int] = ...) -> None: ...

class ReadToolError(_message.Message):
    __slots__ = ("error_message",)
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    def __init__(self, error_message: _Optional[str] = ...) -> None: ...

class EditToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: EditArgs
    result: EditResult
    def __init__(self, args: _Optional[_Union[EditArgs, _Mapping]] = ..., result: _Optional[_Union[EditResult, _Mapping]] = ...) -> None: ...

class EditArgs(_message.Message):
    __slots__ = ("path", "stream_content")
    PATH_FIELD_NUMBER: _ClassVar[int]
    STREAM_CONTENT_FIELD_NUMBER: _ClassVar[int]
    path: str
    stream_content: str
    def __init__(self, path: _Optional[str] = ..., stream_content: _Optional[str] = ...) -> None: ...

class EditResult(_message.Message):
    __slots__ = ("success", "file_not_found", "read_permission_denied", "write_permission_denied", "rejected", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FILE_NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    READ_PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    WRITE_PERMISSION_DENIED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: EditSuccess
    file_not_found: PathOnly
    read_permission_denied: PathOnly
    write_permission_denied: EditWritePermissionDenied
    rejected: EditRejected
    error: EditError
    def __init__(self, success: _Optional[_Union[EditSuccess, _Mapping]] = ..., file_not_found: _Optional[_Union[PathOnly, _Mapping]] = ..., read_permission_denied: _Optional[_Union[PathOnly, _Mapping]] = ..., write_permission_denied: _Optional[_Union[EditWritePermissionDenied, _Mapping]] = ..., rejected: _Optional[_Union[EditRejected, _Mapping]] = ..., error: _Optional[_Union[EditError, _Mapping]] = ...) -> None: ...

class EditSuccess(_message.Message):
    __slots__ = ("path", "lines_added", "lines_removed", "diff_string", "before_full_file_content", "after_full_file_content", "message")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINES_ADDED_FIELD_NUMBER: _ClassVar[int]
    LINES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    DIFF_STRING_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FULL_FILE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FULL_FILE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    path: str
    lines_added: int
    lines_removed: int
    diff_string: str
    before_full_file_content: str
    after_full_file_content: str
    message: str
    def __init__(self, path: _Optional[str] = ..., lines_added: _Optional[int] = ..., lines_removed: _Optional[int] = ..., diff_string: _Optional[str] = ..., before_full_file_content: _Optional[str] = ..., after_full_file_content: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class EditWritePermissionDenied(_message.Message):
    __slots__ = ("path", "error", "is_readonly")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_READONLY_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    is_readonly: bool
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ..., is_readonly: _Optional[bool] = ...) -> None: ...

class EditRejected(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class EditError(_message.Message):
    __slots__ = ("path", "error", "model_visible_error")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MODEL_VISIBLE_ERROR_FIELD_NUMBER: _ClassVar[int]
    path: str
    error: str
    model_visible_error: str
    def __init__(self, path: _Optional[str] = ..., error: _Optional[str] = ..., model_visible_error: _Optional[str] = ...) -> None: ...

class GlobToolCall(_message.Message):
    __slots__ = ("args", "result")
    ARGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    args: GlobToolArgs
    result: GlobToolResult
    def __init__(self, args: _Optional[_Union[GlobToolArgs, _Mapping]] = ..., result: _Optional[_Union[GlobToolResult, _Mapping]] = ...) -> None: ...

class GlobToolArgs(_message.Message):
    __slots__ = ("target_directory", "glob_pattern")
    TARGET_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    GLOB_PATTERN_FIELD_NUMBER: _ClassVar[int]
    target_directory: str
    glob_pattern: str
    def __init__(self, target_directory: _Optional[str] = ..., glob_pattern: _Optional[str] = ...) -> None: ...

class GlobToolResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: GlobToolSuccess
    error: GlobToolError
    def __init__(self, success: _Optional[_Union[GlobToolSuccess, _Mapping]] = ..., error: _Optional[_Union[GlobToolError, _Mapping]] = ...) -> None: ...

class GlobToolSuccess(_message.Message):
    __slots__ = ("pattern", "path", "files", "total_files", "client_truncated", "ripgrep_truncated")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FILES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RIPGREP_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    files: _containers.RepeatedScalarFieldContainer[str]
    total_files: int
    client_truncated: bool
    ripgrep_truncated: bool
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., files: _Optional[_Iterable[str]] = ..., total_files: _Optional[int] = ..., client_truncated: _Optional[bool] = ..., ripgrep_truncated: _Optional[bool] = ...) -> None: ...

class GlobToolError(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: str
    def __init__(self, error: _Optional[str] = ...) -> None: ...

class ToolCallStartedUpdate(_message.Message):
    __slots__ = ("call_id", "tool_call", "model_call_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_call: ToolCall
    model_call_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class ToolCallCompletedUpdate(_message.Message):
    __slots__ = ("call_id", "tool_call", "model_call_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_call: ToolCall
    model_call_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class ExecServerControlMessage(_message.Message):
    __slots__ = ("abort",)
    ABORT_FIELD_NUMBER: _ClassVar[int]
    abort: ExecServerAbort
    def __init__(self, abort: _Optional[_Union[ExecServerAbort, _Mapping]] = ...) -> None: ...

class ExecServerAbort(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class KvServerMessage(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class InteractionUpdate(_message.Message):
    __slots__ = ("text_delta", "tool_call_started", "tool_call_completed", "thinking_delta", "token_delta", "summary_started", "summary_completed", "heartbeat", "turn_ended", "step_started", "step_completed")
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_STARTED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    THINKING_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOKEN_DELTA_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_STARTED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    STEP_STARTED_FIELD_NUMBER: _ClassVar[int]
    STEP_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    text_delta: TextDeltaUpdate
    tool_call_started: ToolCallStartedUpdate
    tool_call_completed: ToolCallCompletedUpdate
    thinking_delta: ThinkingDeltaUpdate
    token_delta: TokenDeltaUpdate
    summary_started: SummaryStartedUpdate
    summary_completed: SummaryCompletedUpdate
    heartbeat: HeartbeatUpdate
    turn_ended: TurnEndedUpdate
    step_started: StepStartedUpdate
    step_completed: StepCompletedUpdate
    def __init__(self, text_delta: _Optional[_Union[TextDeltaUpdate, _Mapping]] = ..., tool_call_started: _Optional[_Union[ToolCallStartedUpdate, _Mapping]] = ..., tool_call_completed: _Optional[_Union[ToolCallCompletedUpdate, _Mapping]] = ..., thinking_delta: _Optional[_Union[ThinkingDeltaUpdate, _Mapping]] = ..., token_delta: _Optional[_Union[TokenDeltaUpdate, _Mapping]] = ..., summary_started: _Optional[_Union[SummaryStartedUpdate, _Mapping]] = ..., summary_completed: _Optional[_Union[SummaryCompletedUpdate, _Mapping]] = ..., heartbeat: _Optional[_Union[HeartbeatUpdate, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEndedUpdate, _Mapping]] = ..., step_started: _Optional[_Union[StepStartedUpdate, _Mapping]] = ..., step_completed: _Optional[_Union[StepCompletedUpdate, _Mapping]] = ...) -> None: ...

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

class StepStartedUpdate(_message.Message):
    __slots__ = ("step_id",)
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    def __init__(self, step_id: _Optional[int] = ...) -> None: ...

class StepCompletedUpdate(_message.Message):
    __slots__ = ("step_id", "step_duration_ms")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    step_duration_ms: int
    def __init__(self, step_id: _Optional[int] = ..., step_duration_ms: _Optional[int] = ...) -> None: ...

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

class NameTabRequest(_message.Message):
    __slots__ = ("messages", "is_project")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    IS_PROJECT_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[ConversationMessage]
    is_project: bool
    def __init__(self, messages: _Optional[_Iterable[_Union[ConversationMessage, _Mapping]]] = ..., is_project: _Optional[bool] = ...) -> None: ...

class ConversationMessage(_message.Message):
    __slots__ = ("text", "type")
    class MessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MESSAGE_TYPE_UNSPECIFIED: _ClassVar[ConversationMessage.MessageType]
        MESSAGE_TYPE_HUMAN: _ClassVar[ConversationMessage.MessageType]
        MESSAGE_TYPE_AI: _ClassVar[ConversationMessage.MessageType]
    MESSAGE_TYPE_UNSPECIFIED: ConversationMessage.MessageType
    MESSAGE_TYPE_HUMAN: ConversationMessage.MessageType
    MESSAGE_TYPE_AI: ConversationMessage.MessageType
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    text: str
    type: ConversationMessage.MessageType
    def __init__(self, text: _Optional[str] = ..., type: _Optional[_Union[ConversationMessage.MessageType, str]] = ...) -> None: ...

class NameTabResponse(_message.Message):
    __slots__ = ("name", "reason", "icon")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ICON_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    icon: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ..., icon: _Optional[str] = ...) -> None: ...
