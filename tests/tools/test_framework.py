"""The wrapper around every tool call: validation, repair, truncation, hooks, cancellation, plugins."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from tools import (
    HookCall,
    InitContext,
    OutputLimits,
    Tool,
    ToolContext,
    ToolResult,
    ToolVetoed,
    define_tool,
    execute,
    load_registry,
    tool_spec,
)
from tools.execute import Outcome
from tools.permission import PermissionEngine
from tools.schema import parameters

from .conftest import Harness, ScriptedHuman


class EchoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="What to say")
    times: int = Field(default=1, ge=1, le=100000, description="How often")
    suffix: str | None = Field(default=None, description="Appended once")


class Echo(Tool[EchoParams]):
    id = "echo"
    Params = EchoParams
    description = "Repeats text."

    async def run(self, params: EchoParams, ctx: ToolContext) -> ToolResult:
        ctx.metadata("echoing", {"times": params.times})
        return ToolResult("echo", "\n".join([params.text] * params.times) + (params.suffix or ""))


class Sleepy(Tool[EchoParams]):
    id = "sleepy"
    Params = EchoParams
    description = "Sleeps."
    cancelled = False

    async def run(self, params: EchoParams, ctx: ToolContext) -> ToolResult:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            Sleepy.cancelled = True
            raise
        return ToolResult("never", "")


@pytest.fixture
def echo(harness: Harness) -> Harness:
    harness.registry.register(Echo())
    harness.registry.register(Sleepy())
    return harness


async def test_invalid_arguments_name_the_field(echo: Harness) -> None:
    outcome = await echo.call("echo", {"text": "hi", "times": 0, "colour": "red"})
    assert outcome.error is not None
    assert outcome.error.startswith("The echo tool was called with invalid arguments: ")
    assert "times: Input should be greater than or equal to 1" in outcome.error
    assert "colour: Extra inputs are not permitted" in outcome.error
    assert outcome.error.endswith("Please rewrite the input so it satisfies the expected schema.")


async def test_malformed_json_and_nulls(echo: Harness) -> None:
    outcome = await echo.call("echo", '{"text": "hi"')
    assert outcome.error is not None and "not valid JSON" in outcome.error
    outcome = await echo.call("echo", "[" * 100_000)  # json: a RecursionError
    assert outcome.error is not None and "not valid JSON (nested too deeply)" in outcome.error
    outcome = await echo.call("echo", '["hi"]')
    assert outcome.error is not None and "JSON object, not list" in outcome.error
    # OpenAI strict mode sends null for parameters the model leaves out: they mean "default".
    outcome = await echo.ok("echo", '{"text": "hi", "times": null, "suffix": null}')
    assert outcome.result is not None and outcome.result.output == "hi"


async def test_tool_names_are_repaired_or_routed_to_invalid(echo: Harness) -> None:
    outcome = await echo.ok("ECHO", {"text": "hi"})
    assert outcome.tool == "echo"
    outcome = await echo.call("edit_file", {"path": "x"})
    assert outcome.tool == "invalid"
    assert outcome.error is not None
    assert "There is no tool called 'edit_file'" in outcome.error
    assert "echo" in outcome.error and "read" in outcome.error and "invalid," not in outcome.error


async def test_long_output_is_cut_and_saved_whole(echo: Harness) -> None:
    outcome = await echo.ok("echo", {"text": "line", "times": 5000})
    assert outcome.result is not None
    meta = outcome.result.metadata
    assert meta["truncated"] is True
    full = Path(meta["outputPath"])
    assert full.read_text() == "\n".join(["line"] * 5000)
    assert full.is_relative_to(echo.env.data_dir)
    assert outcome.result.output.count("\n") < 2010
    assert "3000 more lines" in outcome.result.output and str(full) in outcome.result.output
    # The model is told to read the saved file, and may do so without an external-directory ask.
    page = await echo.ok("read", {"filePath": str(full), "offset": 4999})
    assert page.result is not None and "  4999\tline\n  5000\tline" in page.result.output
    assert echo.human.asked == []


async def test_byte_limit_is_configurable(echo: Harness) -> None:
    echo.env.limits = OutputLimits(max_lines=10_000, max_bytes=100)
    outcome = await echo.ok("echo", {"text": "x" * 30, "times": 10})
    assert outcome.result is not None
    assert outcome.result.output.startswith("x" * 30 + "\n" + "x" * 30 + "\n" + "x" * 30 + "\n\n... output")
    small = await echo.ok("echo", {"text": "short"})
    assert small.result is not None and small.result.metadata == {"truncated": False}


class SaysBounded(Tool[EchoParams]):
    """A tool that says it bounded its own output (``truncated`` set), rightly or not."""

    id = "bounded"
    Params = EchoParams
    description = "Repeats text, claiming to bound it."

    async def run(self, params: EchoParams, ctx: ToolContext) -> ToolResult:
        return ToolResult("bounded", "\n".join([params.text] * params.times), {"truncated": False})


async def test_a_tool_that_bounds_its_output_keeps_its_lines_but_not_more_bytes(echo: Harness) -> None:
    echo.registry.register(SaysBounded())
    lines = await echo.ok("bounded", {"text": "x", "times": 3000})  # its own count of lines stands
    assert lines.result is not None and lines.result.output.count("\n") == 2999
    assert lines.result.metadata == {"truncated": False}
    noted = await echo.ok("bounded", {"text": "y" * 100, "times": 530})  # 53 KB: the notes' room
    assert noted.result is not None and noted.result.output.count("\n") == 529
    over = await echo.ok("bounded", {"text": "z" * 1000, "times": 100})  # 100 KB
    assert over.result is not None
    output, meta = over.result.output, over.result.metadata
    assert len(output.encode()) < echo.env.limits.max_bytes + 1024
    assert output.startswith("z" * 1000 + "\n") and "49 more lines" in output
    assert meta["truncated"] is True and Path(meta["outputPath"]).read_text() == "\n".join(["z" * 1000] * 100)


def test_limits_count_lines_and_utf8_bytes_exactly(tmp_path: Path) -> None:
    from tools.truncate import truncate  # noqa: PLC0415

    limits = OutputLimits(max_lines=3, max_bytes=100)

    def cut(text: str) -> bool:
        return truncate(text, limits, tmp_path, "t").path is not None

    assert not cut("a\nb\nc") and cut("a\nb\nc\nd")  # 3 lines fit, 4 do not
    assert not cut("\U0001f600" * 25) and cut("\U0001f600" * 26)  # 4 bytes each: 100 fit, 104 do not
    assert not cut("\u00e9" * 50) and cut("\u00e9" * 51)  # 2 bytes each


async def test_hooks_see_change_and_veto_calls(echo: Harness) -> None:
    seen: list[tuple[str, str | None]] = []

    async def before(call: HookCall) -> None:
        if call.args.get("text") == "forbidden":
            raise ToolVetoed("the policy hook does not allow this text")
        call.args["text"] = call.args["text"].upper()

    async def after(call: HookCall, outcome: Outcome) -> None:
        seen.append((call.tool, outcome.result.output if outcome.result else outcome.error))

    echo.registry.add_hooks(before=before, after=after)
    outcome = await echo.ok("echo", {"text": "hi"})
    assert outcome.result is not None and outcome.result.output == "HI"
    vetoed = await echo.call("echo", {"text": "forbidden"})
    assert vetoed.error == "The call was blocked before it ran: the policy hook does not allow this text"
    assert seen == [("echo", "HI")]


async def test_abort_cancels_a_running_tool(echo: Harness) -> None:
    ctx = ToolContext(echo.env, "call-9")
    progress: list[str | None] = []
    ctx.on_metadata = lambda title, _meta: progress.append(title)
    running = asyncio.create_task(execute(echo.registry, "sleepy", {"text": "z"}, ctx))
    await asyncio.sleep(0.05)
    ctx.abort.set()
    outcome = await asyncio.wait_for(running, 10)
    assert outcome.error == "Cancelled by the user." and outcome.stops_turn
    assert Sleepy.cancelled
    assert outcome.ended >= outcome.started


async def test_an_abort_before_the_call_cancels_it_at_once(echo: Harness) -> None:
    ctx = ToolContext(echo.env, "call-10")
    ctx.abort.set()
    outcome = await asyncio.wait_for(execute(echo.registry, "sleepy", {"text": "z"}, ctx), 10)
    assert outcome.error == "Cancelled by the user." and outcome.stops_turn


async def test_cancelling_the_caller_cancels_the_tool_and_goes_on_up(echo: Harness) -> None:
    Sleepy.cancelled = False
    running = asyncio.create_task(execute(echo.registry, "sleepy", {"text": "z"}, ToolContext(echo.env, "c")))
    await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert Sleepy.cancelled  # its cleanup ran before the caller resumed


async def test_an_abort_as_the_tool_finishes_stays_out_of_the_caller(echo: Harness) -> None:
    class Quits(Tool[EchoParams]):
        id = "quits"
        Params = EchoParams
        description = "Aborts its own call and returns before the cancellation arrives."

        async def run(self, params: EchoParams, ctx: ToolContext) -> ToolResult:
            ctx.abort.set()
            return ToolResult("done", params.text)

    echo.registry.register(Quits())
    async with asyncio.timeout(10):
        outcome = await execute(echo.registry, "quits", {"text": "z"}, ToolContext(echo.env, "c"))
        await asyncio.sleep(0)  # the abort's cancellation of this task was taken back
    assert outcome.result is not None and outcome.result.output == "z"
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


async def test_metadata_progress_reaches_the_listener(echo: Harness) -> None:
    updates: list[tuple[str | None, dict[str, Any]]] = []
    ctx = ToolContext(echo.env, "call-2", on_metadata=lambda t, m: updates.append((t, m)))
    await execute(echo.registry, "echo", {"text": "a", "times": 3}, ctx)
    assert updates == [("echoing", {"times": 3})]


async def test_unexpected_exceptions_become_a_readable_error(echo: Harness) -> None:
    class Broken(Tool[EchoParams]):
        id = "broken"
        Params = EchoParams
        description = "Fails."

        async def run(self, params: EchoParams, ctx: ToolContext) -> ToolResult:
            raise KeyError("boom")

    echo.registry.register(Broken())
    outcome = await echo.call("broken", {"text": "x"})
    assert outcome.error is not None and "failed unexpectedly (KeyError: 'boom')" in outcome.error
    assert "Traceback" not in outcome.error


PROJECT_TOOL = """
from pydantic import BaseModel, ConfigDict, Field
from tools import ToolResult, define_tool

class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Who to greet")

@define_tool("Greets someone.", Params)
async def hello(params, ctx):
    return ToolResult("hello", f"hello {params.name} from {ctx.root.name}")

@define_tool("Greets loudly.", Params)
async def tool(params, ctx):
    return ToolResult("hello", f"HELLO {params.name}")
"""


async def test_project_tools_are_loaded_and_namespaced(echo: Harness) -> None:
    folder = echo.root / ".lspilot" / "tools"
    folder.mkdir(parents=True)
    (folder / "greet.py").write_text(PROJECT_TOOL)
    (folder / "broken.py").write_text("import nothing_like_this\n")
    registry = load_registry(echo.root, None, project=True)
    assert {"greet", "greet_hello", "read", "grep"} <= set(registry.tools)
    assert any("broken.py" in e and "nothing_like_this" in e for e in registry.load_errors)
    echo.registry = registry
    outcome = await echo.ok("greet_hello", {"name": "Ada"})
    assert outcome.result is not None and outcome.result.output == "hello Ada from ws"
    outcome = await echo.ok("greet", {"name": "Ada"})
    assert outcome.result is not None and outcome.result.output == "HELLO Ada"


def test_project_tools_are_not_even_imported_when_the_caller_says_no(echo: Harness, tmp_path: Path) -> None:
    # In a workspace its user does not trust, importing .lspilot/tools would run the repository's code.
    folder = echo.root / ".lspilot" / "tools"
    folder.mkdir(parents=True)
    ran = tmp_path / "imported"
    (folder / "greet.py").write_text(f"open({str(ran)!r}, 'w').close()\n{PROJECT_TOOL}")
    registry = load_registry(echo.root, None, project=False)
    assert "greet" not in registry.tools and "read" in registry.tools
    assert not ran.exists() and registry.load_errors == []


async def test_entry_point_plugins_register_tools_and_hooks(echo: Harness, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "lspilot_demo_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "lspilot_demo_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lspilot-demo-plugin\nVersion: 1.0\n"
    )
    (site / "lspilot_demo_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[lspilot.tools]\ndemo = lspilot_demo_plugin:setup\n"
    )
    (site / "lspilot_demo_plugin.py").write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel, ConfigDict
            from tools import ToolResult, define_tool

            class Params(BaseModel):
                model_config = ConfigDict(extra="forbid")

            @define_tool("Says the plugin is here.", Params, id="plugin_ping")
            async def ping(params, ctx):
                return ToolResult("ping", "pong")

            def setup(registry):
                registry.register(ping)

                async def before(call):
                    call.args.pop("noise", None)

                registry.add_hooks(before=before)
            """
        )
    )
    sys.path.insert(0, str(site))
    try:
        registry = load_registry(echo.root, None, project=True)
    finally:
        sys.path.remove(str(site))
    assert registry.load_errors == []
    echo.registry = registry
    outcome = await echo.ok("plugin_ping", {"noise": 1})
    assert outcome.result is not None and outcome.result.output == "pong"


async def test_init_adapts_tools_to_the_config_and_drops_broken_ones(echo: Harness) -> None:
    class Configured(Echo):
        id = "configured"

        async def init(self, ctx: InitContext) -> None:
            self.description = (
                f"Repeats text for {ctx.agent} in {ctx.root.name}; limit {ctx.settings['limit']}."
            )

    class BadInit(Echo):
        id = "badinit"

        async def init(self, ctx: InitContext) -> None:
            raise RuntimeError("needs a token")

    echo.registry.register(Configured())
    echo.registry.register(BadInit())
    await echo.registry.initialize(InitContext(echo.root, "plan", {"limit": 3}))
    assert echo.registry.tools["configured"].description == "Repeats text for plan in ws; limit 3."
    assert "badinit" not in echo.registry.tools
    assert echo.registry.load_errors == ["tool badinit: init failed: needs a token"]


def test_register_replaces_a_tool_with_the_same_id(echo: Harness) -> None:
    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid")

    @define_tool("My own read.", Params, id="read")
    async def my_read(params: Params, ctx: ToolContext) -> ToolResult:
        return ToolResult("mine", "mine")

    echo.registry.register(my_read)
    assert echo.registry.get("read") is my_read


def test_denied_tools_are_not_offered(echo: Harness) -> None:
    from tools.approvals import ApprovalStore  # noqa: PLC0415
    from tools.permission import DEFAULT_RULES, Rule  # noqa: PLC0415

    def offered(*rules: Rule) -> set[str]:
        engine = PermissionEngine([*DEFAULT_RULES, *rules], ApprovalStore(None), ScriptedHuman())
        return {t.id for t in echo.registry.offered(engine, "anthropic/claude-sonnet-4")}

    assert {"read", "webfetch", "echo"} <= offered()
    assert "invalid" not in offered()
    assert "webfetch" not in offered(Rule("webfetch", "*", "deny"))
    assert "webfetch" in offered(
        Rule("webfetch", "*", "deny"), Rule("webfetch", "https://docs.python.org/*", "allow")
    )
    assert "read" not in offered(Rule("read", "*", "deny"))


def test_schemas_come_from_params_and_adapt_per_provider() -> None:
    openai = parameters(EchoParams, "openai")
    assert openai["required"] == ["text", "times", "suffix"]
    assert openai["additionalProperties"] is False
    assert {"type": "null"} in openai["properties"]["times"]["anyOf"]
    anthropic = parameters(EchoParams, "anthropic")
    assert anthropic["required"] == ["text"] and anthropic["additionalProperties"] is False
    assert anthropic["properties"]["text"] == {"type": "string", "description": "What to say"}
    gemini = parameters(EchoParams, "gemini")
    assert "additionalProperties" not in gemini
    spec = tool_spec(Echo(), "openai")
    assert spec["function"]["name"] == "echo" and spec["function"]["description"] == "Repeats text."


def test_every_builtin_has_a_description_and_described_fields(echo: Harness) -> None:
    for tool in echo.registry.tools.values():
        assert len(tool.description) > 40 or tool.id in ("echo", "sleepy"), tool.id
        schema = parameters(tool.Params, "anthropic")
        for name, prop in schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.id}.{name} has no description"
        assert tool.Params.model_config.get("extra") == "forbid", tool.id


def test_saved_outputs_older_than_a_week_are_removed(tmp_path: Path) -> None:
    from tools.truncate import save  # noqa: PLC0415

    folder = tmp_path / "tool-output"
    folder.mkdir()
    old, recent = folder / "old.txt", folder / "recent.txt"
    old.write_text("old")
    recent.write_text("recent")
    eight_days_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (eight_days_ago, eight_days_ago))
    saved = save("new output", folder, "call-7")
    assert not old.exists() and recent.exists() and saved.read_text() == "new output"
