"""Run execution: the executor port, the in-process executor, the event relay and AiRuntime."""

from typing import TYPE_CHECKING, Any

from chainwarden.runtime.ai_runtime import AiRuntime, Run
from chainwarden.runtime.anthropic_executor import AnthropicExecutor, AnthropicTool
from chainwarden.runtime.attach import Attachment
from chainwarden.runtime.claude_agent_executor import ClaudeAgentExecutor
from chainwarden.runtime.containment_port import Containment, LlmCallGuard, RunLimits
from chainwarden.runtime.credits import CreditPolicy
from chainwarden.runtime.dag_node import DagNodeExecutor, dag_node_executor
from chainwarden.runtime.events import (
    AiEvent,
    AssistantFinal,
    Done,
    Error,
    ErrorCode,
    TextDelta,
    ToolCallResult,
    ToolCallStart,
    UsageReport,
)
from chainwarden.runtime.inproc import GraphFn, InProcGraphExecutor
from chainwarden.runtime.once import Once
from chainwarden.runtime.port import GraphExecutor, GraphFinal, GraphRunRequest, GraphRunResult, Usage
from chainwarden.runtime.relay import DEFAULT_UI_BUFFER, RunEventRelay
from chainwarden.runtime.run_context import LlmCallFailed, LlmCallRefused, LlmResult, RunContext

if TYPE_CHECKING:
    from chainwarden.runtime.langgraph_executor import LangGraphExecutor


def __getattr__(name: str) -> Any:
    # LangGraphExecutor subclasses LangChain's callback handler: importing it needs the `langgraph` extra,
    # so it is imported on first use and `import chainwarden.runtime` works without LangChain.
    if name == "LangGraphExecutor":
        from chainwarden.runtime.langgraph_executor import LangGraphExecutor  # noqa: PLC0415

        return LangGraphExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_UI_BUFFER",
    "AiEvent",
    "AiRuntime",
    "AnthropicExecutor",
    "AnthropicTool",
    "AssistantFinal",
    "Attachment",
    "ClaudeAgentExecutor",
    "Containment",
    "CreditPolicy",
    "DagNodeExecutor",
    "Done",
    "Error",
    "ErrorCode",
    "GraphExecutor",
    "GraphFinal",
    "GraphFn",
    "GraphRunRequest",
    "GraphRunResult",
    "InProcGraphExecutor",
    "LangGraphExecutor",
    "LlmCallFailed",
    "LlmCallGuard",
    "LlmCallRefused",
    "LlmResult",
    "Once",
    "Run",
    "RunContext",
    "RunEventRelay",
    "RunLimits",
    "TextDelta",
    "ToolCallResult",
    "ToolCallStart",
    "Usage",
    "UsageReport",
    "dag_node_executor",
]
