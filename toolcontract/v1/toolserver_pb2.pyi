from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Comparison(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPARE_LINES: _ClassVar[Comparison]
    COMPARE_EXACT: _ClassVar[Comparison]
    COMPARE_TOKENS: _ClassVar[Comparison]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OK: _ClassVar[Outcome]
    ERROR: _ClassVar[Outcome]
    TIMEOUT: _ClassVar[Outcome]
    MEMORY_LIMIT: _ClassVar[Outcome]
    DENIED: _ClassVar[Outcome]
    CRASHED: _ClassVar[Outcome]
    INVALID: _ClassVar[Outcome]
    COMPILE_ERROR: _ClassVar[Outcome]
    OUTPUT_LIMIT: _ClassVar[Outcome]

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    ACCEPTED: _ClassVar[Verdict]
    WRONG_ANSWER: _ClassVar[Verdict]
    RUNTIME_ERROR: _ClassVar[Verdict]
    TIME_LIMIT_EXCEEDED: _ClassVar[Verdict]
    MEMORY_LIMIT_EXCEEDED: _ClassVar[Verdict]
    OUTPUT_LIMIT_EXCEEDED: _ClassVar[Verdict]
    SKIPPED: _ClassVar[Verdict]
    FINISHED: _ClassVar[Verdict]
    SYSTEM_ERROR: _ClassVar[Verdict]
COMPARE_LINES: Comparison
COMPARE_EXACT: Comparison
COMPARE_TOKENS: Comparison
OUTCOME_UNSPECIFIED: Outcome
OK: Outcome
ERROR: Outcome
TIMEOUT: Outcome
MEMORY_LIMIT: Outcome
DENIED: Outcome
CRASHED: Outcome
INVALID: Outcome
COMPILE_ERROR: Outcome
OUTPUT_LIMIT: Outcome
VERDICT_UNSPECIFIED: Verdict
ACCEPTED: Verdict
WRONG_ANSWER: Verdict
RUNTIME_ERROR: Verdict
TIME_LIMIT_EXCEEDED: Verdict
MEMORY_LIMIT_EXCEEDED: Verdict
OUTPUT_LIMIT_EXCEEDED: Verdict
SKIPPED: Verdict
FINISHED: Verdict
SYSTEM_ERROR: Verdict

class ExecuteRequest(_message.Message):
    __slots__ = ("request_id", "python", "search", "lean", "json", "cpp", "bash", "program", "limits")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    LEAN_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    CPP_FIELD_NUMBER: _ClassVar[int]
    BASH_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    python: PythonCall
    search: SearchCall
    lean: LeanCall
    json: JsonCall
    cpp: CppCall
    bash: BashCall
    program: ProgramCall
    limits: Limits
    def __init__(self, request_id: _Optional[str] = ..., python: _Optional[_Union[PythonCall, _Mapping]] = ..., search: _Optional[_Union[SearchCall, _Mapping]] = ..., lean: _Optional[_Union[LeanCall, _Mapping]] = ..., json: _Optional[_Union[JsonCall, _Mapping]] = ..., cpp: _Optional[_Union[CppCall, _Mapping]] = ..., bash: _Optional[_Union[BashCall, _Mapping]] = ..., program: _Optional[_Union[ProgramCall, _Mapping]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ("timeout_ms", "memory_mb", "max_output_bytes")
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    memory_mb: int
    max_output_bytes: int
    def __init__(self, timeout_ms: _Optional[int] = ..., memory_mb: _Optional[int] = ..., max_output_bytes: _Optional[int] = ...) -> None: ...

class PythonCall(_message.Message):
    __slots__ = ("code", "session_id", "stdin", "files", "fetch_files")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FETCH_FILES_FIELD_NUMBER: _ClassVar[int]
    code: str
    session_id: str
    stdin: str
    files: _containers.ScalarMap[str, bytes]
    fetch_files: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, code: _Optional[str] = ..., session_id: _Optional[str] = ..., stdin: _Optional[str] = ..., files: _Optional[_Mapping[str, bytes]] = ..., fetch_files: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchCall(_message.Message):
    __slots__ = ("query", "index", "top_k")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    query: str
    index: str
    top_k: int
    def __init__(self, query: _Optional[str] = ..., index: _Optional[str] = ..., top_k: _Optional[int] = ...) -> None: ...

class LeanCall(_message.Message):
    __slots__ = ("code", "header")
    CODE_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    code: str
    header: str
    def __init__(self, code: _Optional[str] = ..., header: _Optional[str] = ...) -> None: ...

class CppCall(_message.Message):
    __slots__ = ("source", "cases", "stdin", "compare", "stop_on_failure", "compile_timeout_ms")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    COMPARE_FIELD_NUMBER: _ClassVar[int]
    STOP_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    COMPILE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    source: str
    cases: _containers.RepeatedCompositeFieldContainer[CppCase]
    stdin: str
    compare: Comparison
    stop_on_failure: bool
    compile_timeout_ms: int
    def __init__(self, source: _Optional[str] = ..., cases: _Optional[_Iterable[_Union[CppCase, _Mapping]]] = ..., stdin: _Optional[str] = ..., compare: _Optional[_Union[Comparison, str]] = ..., stop_on_failure: _Optional[bool] = ..., compile_timeout_ms: _Optional[int] = ...) -> None: ...

class BashCall(_message.Message):
    __slots__ = ("script", "stdin")
    SCRIPT_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    script: str
    stdin: str
    def __init__(self, script: _Optional[str] = ..., stdin: _Optional[str] = ...) -> None: ...

class ProgramCall(_message.Message):
    __slots__ = ("language", "source", "cases", "stdin", "compare", "stop_on_failure", "compile_timeout_ms")
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    COMPARE_FIELD_NUMBER: _ClassVar[int]
    STOP_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    COMPILE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    language: str
    source: str
    cases: _containers.RepeatedCompositeFieldContainer[CppCase]
    stdin: str
    compare: Comparison
    stop_on_failure: bool
    compile_timeout_ms: int
    def __init__(self, language: _Optional[str] = ..., source: _Optional[str] = ..., cases: _Optional[_Iterable[_Union[CppCase, _Mapping]]] = ..., stdin: _Optional[str] = ..., compare: _Optional[_Union[Comparison, str]] = ..., stop_on_failure: _Optional[bool] = ..., compile_timeout_ms: _Optional[int] = ...) -> None: ...

class CppCase(_message.Message):
    __slots__ = ("stdin", "expected_stdout")
    STDIN_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_STDOUT_FIELD_NUMBER: _ClassVar[int]
    stdin: str
    expected_stdout: str
    def __init__(self, stdin: _Optional[str] = ..., expected_stdout: _Optional[str] = ...) -> None: ...

class JsonCall(_message.Message):
    __slots__ = ("tool", "arguments")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    tool: str
    arguments: str
    def __init__(self, tool: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("request_id", "outcome", "stdout", "stderr", "error", "truncated", "elapsed_us", "queued_us", "python", "search", "lean", "cpp", "bash", "program")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_US_FIELD_NUMBER: _ClassVar[int]
    QUEUED_US_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    LEAN_FIELD_NUMBER: _ClassVar[int]
    CPP_FIELD_NUMBER: _ClassVar[int]
    BASH_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    outcome: Outcome
    stdout: str
    stderr: str
    error: str
    truncated: bool
    elapsed_us: int
    queued_us: int
    python: PythonResult
    search: SearchResult
    lean: LeanResult
    cpp: CppResult
    bash: BashResult
    program: CppResult
    def __init__(self, request_id: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., error: _Optional[str] = ..., truncated: _Optional[bool] = ..., elapsed_us: _Optional[int] = ..., queued_us: _Optional[int] = ..., python: _Optional[_Union[PythonResult, _Mapping]] = ..., search: _Optional[_Union[SearchResult, _Mapping]] = ..., lean: _Optional[_Union[LeanResult, _Mapping]] = ..., cpp: _Optional[_Union[CppResult, _Mapping]] = ..., bash: _Optional[_Union[BashResult, _Mapping]] = ..., program: _Optional[_Union[CppResult, _Mapping]] = ...) -> None: ...

class PythonResult(_message.Message):
    __slots__ = ("value", "exit_code", "files", "displays")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DISPLAYS_FIELD_NUMBER: _ClassVar[int]
    value: str
    exit_code: int
    files: _containers.ScalarMap[str, bytes]
    displays: _containers.RepeatedCompositeFieldContainer[Display]
    def __init__(self, value: _Optional[str] = ..., exit_code: _Optional[int] = ..., files: _Optional[_Mapping[str, bytes]] = ..., displays: _Optional[_Iterable[_Union[Display, _Mapping]]] = ...) -> None: ...

class Display(_message.Message):
    __slots__ = ("kind", "data", "metadata_json")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    data: _containers.ScalarMap[str, bytes]
    metadata_json: str
    def __init__(self, kind: _Optional[str] = ..., data: _Optional[_Mapping[str, bytes]] = ..., metadata_json: _Optional[str] = ...) -> None: ...

class SearchResult(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("id", "title", "text", "score")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    text: str
    score: float
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., text: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class LeanResult(_message.Message):
    __slots__ = ("complete", "messages", "sorries")
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SORRIES_FIELD_NUMBER: _ClassVar[int]
    complete: bool
    messages: _containers.RepeatedCompositeFieldContainer[LeanMessage]
    sorries: int
    def __init__(self, complete: _Optional[bool] = ..., messages: _Optional[_Iterable[_Union[LeanMessage, _Mapping]]] = ..., sorries: _Optional[int] = ...) -> None: ...

class LeanMessage(_message.Message):
    __slots__ = ("severity", "line", "column", "text")
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    severity: str
    line: int
    column: int
    text: str
    def __init__(self, severity: _Optional[str] = ..., line: _Optional[int] = ..., column: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class BashResult(_message.Message):
    __slots__ = ("exit_code",)
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    def __init__(self, exit_code: _Optional[int] = ...) -> None: ...

class CppResult(_message.Message):
    __slots__ = ("compile", "cases", "passed")
    COMPILE_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    compile: CppCompile
    cases: _containers.RepeatedCompositeFieldContainer[CppCaseResult]
    passed: int
    def __init__(self, compile: _Optional[_Union[CppCompile, _Mapping]] = ..., cases: _Optional[_Iterable[_Union[CppCaseResult, _Mapping]]] = ..., passed: _Optional[int] = ...) -> None: ...

class CppCompile(_message.Message):
    __slots__ = ("ok", "cached", "stderr", "exit_code", "elapsed_us", "outcome")
    OK_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_US_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    cached: bool
    stderr: str
    exit_code: int
    elapsed_us: int
    outcome: Outcome
    def __init__(self, ok: _Optional[bool] = ..., cached: _Optional[bool] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., elapsed_us: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ...) -> None: ...

class CppCaseResult(_message.Message):
    __slots__ = ("index", "verdict", "outcome", "stdout", "stderr", "exit_code", "elapsed_us", "error", "truncated")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_US_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    index: int
    verdict: Verdict
    outcome: Outcome
    stdout: str
    stderr: str
    exit_code: int
    elapsed_us: int
    error: str
    truncated: bool
    def __init__(self, index: _Optional[int] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., elapsed_us: _Optional[int] = ..., error: _Optional[str] = ..., truncated: _Optional[bool] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ("name", "description", "parameters")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[str] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("limits",)
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: Limits
    def __init__(self, limits: _Optional[_Union[Limits, _Mapping]] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("session_id", "idle_timeout_s", "replica")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    idle_timeout_s: int
    replica: str
    def __init__(self, session_id: _Optional[str] = ..., idle_timeout_s: _Optional[int] = ..., replica: _Optional[str] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ServerInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SandboxCheck(_message.Message):
    __slots__ = ("name", "ok", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    ok: bool
    detail: str
    def __init__(self, name: _Optional[str] = ..., ok: _Optional[bool] = ..., detail: _Optional[str] = ...) -> None: ...

class ToolStatus(_message.Message):
    __slots__ = ("name", "available", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    available: bool
    detail: str
    def __init__(self, name: _Optional[str] = ..., available: _Optional[bool] = ..., detail: _Optional[str] = ...) -> None: ...

class ServerInfo(_message.Message):
    __slots__ = ("version", "serving", "sandbox_verified", "insecure", "reason", "checks", "tools", "draining")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_VERIFIED_FIELD_NUMBER: _ClassVar[int]
    INSECURE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    version: str
    serving: bool
    sandbox_verified: bool
    insecure: bool
    reason: str
    checks: _containers.RepeatedCompositeFieldContainer[SandboxCheck]
    tools: _containers.RepeatedCompositeFieldContainer[ToolStatus]
    draining: bool
    def __init__(self, version: _Optional[str] = ..., serving: _Optional[bool] = ..., sandbox_verified: _Optional[bool] = ..., insecure: _Optional[bool] = ..., reason: _Optional[str] = ..., checks: _Optional[_Iterable[_Union[SandboxCheck, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[ToolStatus, _Mapping]]] = ..., draining: _Optional[bool] = ...) -> None: ...
