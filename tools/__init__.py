"""tools: what the agent can do. Every call goes through ``execute`` (validation, permissions,
cancellation, bounded output); tools live one per file with their description beside them.

Imports ``lsp_bridge``; never imports ``daemon``.
"""

from __future__ import annotations

from ._shell_process import secrets as environment_secrets
from .approvals import ApprovalStore
from .base import Attachment, InitContext, Tool, ToolError, ToolResult, define_tool
from .changes import Applied, ChangeSink, DiskChanges, FileChange
from .context import FileStamp, MemorySession, SessionState, Todo, ToolContext, ToolEnv
from .execute import Outcome, execute
from .permission import (
    DEFAULT_RULES,
    Asker,
    PermissionDenied,
    PermissionEngine,
    PermissionRejected,
    PermissionRequest,
    Reply,
    Rule,
    rules_from_config,
)
from .registry import HookCall, ToolRegistry, ToolVetoed, builtin_tools, load_registry
from .schema import tool_spec
from .truncate import OutputLimits

__all__ = [
    "DEFAULT_RULES",
    "Applied",
    "ApprovalStore",
    "Asker",
    "Attachment",
    "ChangeSink",
    "DiskChanges",
    "FileChange",
    "FileStamp",
    "HookCall",
    "InitContext",
    "MemorySession",
    "Outcome",
    "OutputLimits",
    "PermissionDenied",
    "PermissionEngine",
    "PermissionRejected",
    "PermissionRequest",
    "Reply",
    "Rule",
    "SessionState",
    "Todo",
    "Tool",
    "ToolContext",
    "ToolEnv",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolVetoed",
    "builtin_tools",
    "define_tool",
    "environment_secrets",
    "execute",
    "load_registry",
    "rules_from_config",
    "tool_spec",
]
