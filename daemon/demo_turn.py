"""Part two of `lspilot demo`: one whole agent turn on the sample project, offline.

Without ``LSPILOT_MODEL`` the model is a scripted stand-in (the fake OpenAI-compatible server of
``scripted_model``, over HTTP through real litellm), and the demo says so. Everything else is real:
the loop, the tools, the permission asks (approved by the demo and printed), basedpyright, the
session in SQLite. The scripted model asks the lsp tool for the references of ``total_area``,
reads the files, changes the function's signature with ``apply_patch``, reads the diagnostics the
change caused in ``main.py``, fixes the call with ``edit`` and answers. Its later steps look at the
tool results it was sent, so the answer reports what the tools really said.

With ``LSPILOT_MODEL`` set the same prompt goes to that provider and the terminal asks.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tools import PermissionRequest, Reply

from .loop import Event
from .run import EXIT, Renderer
from .runtime import Runtime
from .scripted_model import JSON, ScriptedModel, Turn
from .terminal import TerminalAsker

PROMPT = (
    "Give total_area a `scale: float` parameter that multiplies the summed area (for unit "
    "conversions), and update every caller so the project still type-checks."
)

PATCH = """*** Begin Patch
*** Update File: geometry/total.py
@@
-def total_area(shapes: list[Shape]) -> float:
-    return sum(shape.area() for shape in shapes)
+def total_area(shapes: list[Shape], scale: float) -> float:
+    return scale * sum(shape.area() for shape in shapes)
*** End Patch"""


def _last_tool_results(body: JSON) -> str:
    """The tool results of the model's previous step, as it was sent them."""
    results: list[str] = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        results.append(str(message["content"]))
    return "\n".join(reversed(results))


def _fix_or_report(body: JSON) -> Turn:
    seen = _last_tool_results(body)
    if "main.py" in seen and "New problems" in seen:
        return Turn(
            text="The language server reports the call in main.py lacks `scale`; fixing it.",
            tool_calls=[
                (
                    "edit",
                    {
                        "filePath": "main.py",
                        "oldString": "total_area(shapes):.2f",
                        "newString": "total_area(shapes, scale=1.0):.2f",
                    },
                )
            ],
        )
    return Turn(text=f"I expected the language server to flag main.py, but the patch said:\n{seen}")


def _answer(body: JSON) -> Turn:
    seen = _last_tool_results(body)
    if "New problems" in seen:
        return Turn(text=f"The fix still leaves problems:\n{seen}")
    return Turn(
        text="Done. `total_area(shapes, scale)` now multiplies the summed area by `scale`; its one "
        "caller, `report` in main.py, passes `scale=1.0`, and basedpyright reports no new problems."
    )


def script() -> list[Turn | Any]:
    return [
        Turn(
            text="First, who calls total_area?",
            tool_calls=[("lsp", {"operation": "findReferences", "symbol": "total_area"})],
        ),
        Turn(tool_calls=[("read", {"filePath": "geometry/total.py"}), ("read", {"filePath": "main.py"})]),
        Turn(text="Adding the parameter.", tool_calls=[("apply_patch", {"patchText": PATCH})]),
        _fix_or_report,
        _answer,
    ]


class DemoAsker:
    """Approves each ask once and says so: the demo works on a throwaway copy of the sample."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer

    async def permission(self, request: PermissionRequest) -> Reply:
        self.renderer.note(f"(demo) approving: {request.title}")
        return Reply("once")

    async def question(self, question: str, options: list[str]) -> str:
        return options[0]


async def run(root: Path) -> int:
    renderer = Renderer(sys.stdout, sys.stdout.isatty(), root, outputs=True)
    real = os.environ.get("LSPILOT_MODEL")
    with ScriptedModel(script()) as fake:
        if real:
            print(f"lspilot demo, part 2: an agent turn with {real}")
            asker: Any = TerminalAsker()
            model, api_base = None, None
        else:
            print("lspilot demo, part 2: an agent turn with a SCRIPTED demo model (set LSPILOT_MODEL")
            print("to use a real provider); the tools, language server and session are real")
            asker = DemoAsker(renderer)
            model, api_base = "openai/scripted", fake.api_base
            # A config of its own, beside the copy of the sample: not the project's, which counts only
            # in a workspace the user trusts (daemon.trust), nor the user's, whose key is no one's here.
            own = root.parent / "config"
            own.mkdir(exist_ok=True)
            (own / "config.toml").write_text('[provider_options]\napi_key = "scripted-demo"\n')
            os.environ["LSPILOT_CONFIG_DIR"] = str(own)
        runtime = Runtime.open(root)

        def show(event: Event) -> None:
            if event.type == "turn.start":
                renderer.note(f"> {PROMPT}")
            renderer(event)

        loop = runtime.loop(asker, model=model, api_base=api_base, listeners=[show])
        try:
            await loop.initialize()
            result = await loop.run_turn(PROMPT)
        finally:
            await loop.env.close()
            runtime.store.close()
    print(f"\n\nsession {result.session_id} ({result.stop_reason}); demo done")
    return EXIT.get(result.stop_reason, 1)
