"""Every JSON the daemon writes is valid Unicode, also when a file name is not UTF-8: a real
`lspilot serve` with real Neovim decoding what it sent, and `lspilot run --json` and the JSON export."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from daemon.scripted_model import ScriptedModel, Turn

from .conftest import LSPILOT
from .serving import RawEditor

NVIM = str(Path(sys.executable).with_name("nvim"))

#: Decodes each line of the file named by its argument as Neovim's LSP client decodes a message.
DECODE = """
local failed = 0
for line in io.lines(arg[1]) do
  local ok, err = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok then
    failed = failed + 1
    io.stdout:write("refused: " .. tostring(err) .. "\\n")
  end
end
io.stdout:write("decoded, refused " .. failed .. "\\n")
"""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]  # pyright: ignore[reportUnknownVariableType]
    return []


async def test_a_file_name_that_is_not_utf8_reaches_neovim_as_valid_json(
    tmp_path: Path, fake: ScriptedModel
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / os.fsdecode(b"caf\xe9.py")).write_bytes(b"x = 1\n")  # a Latin-1 name
    # The model writes the name as the tools show it; the read's metadata carries the real path.
    fake.turns.extend(
        [Turn(tool_calls=[("read", {"filePath": "caf\\xe9.py"})]), Turn(text="read it \N{GRINNING FACE}")]
    )
    editor = await RawEditor.start(tmp_path, fake, "serve")
    async with asyncio.timeout(120):
        await editor.initialize(workspace)
        assert (await editor.ask("read caf\\xe9.py"))["result"]["stopReason"] == "end"
        assert await editor.stop() == 0

    messages = [json.loads(body.decode("utf-8", errors="strict")) for body in editor.bodies]
    for message in messages:  # no lone surrogate escaped in any string (they decode to str)
        for text in _strings(message):
            text.encode("utf-8", errors="strict")
    updates = [m["params"] for m in messages if m.get("method") == "lspilot/update"]
    read = next(u for u in updates if u["kind"] == "toolCall" and u["status"] == "completed")
    assert read["metadata"]["path"] == f"{workspace}/caf\\xe9.py"  # as the tools show the name
    text = "".join(u["delta"] for u in updates if u["kind"] == "text")
    assert text == "read it \N{GRINNING FACE}"  # a surrogate pair in JSON, kept

    lines = tmp_path / "messages.jsonl"
    lines.write_bytes(b"\n".join(editor.bodies) + b"\n")
    script = tmp_path / "decode.lua"
    script.write_text(DECODE)
    nvim = await asyncio.create_subprocess_exec(
        NVIM, "--clean", "-l", str(script), str(lines), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(nvim.communicate(), 60)
    assert nvim.returncode == 0, err
    assert out == b"decoded, refused 0\n"


def test_run_json_and_the_json_export_carry_such_a_name_as_valid_unicode(
    empty_workspace: Path, fake: ScriptedModel
) -> None:
    (empty_workspace / os.fsdecode(b"caf\xe9.py")).write_bytes(b"x = 1\n")
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "caf\\xe9.py"})]), Turn(text="ok")])
    model = ["--model", "openai/scripted", "--api-base", fake.api_base]
    env = os.environ | {"OPENAI_API_KEY": "sk-fake"}
    run = subprocess.run(
        [LSPILOT, "run", "read it", "--root", str(empty_workspace), "--json", *model],
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    )
    events = [json.loads(line.decode("utf-8", errors="strict")) for line in run.stdout.splitlines()]
    read = next(e["data"] for e in events if e["type"] == "tool" and e["data"]["state"] == "completed")
    assert read["metadata"]["path"] == f"{empty_workspace}/caf\\xe9.py"
    session = events[0]["session_id"]
    exported = subprocess.run(
        [LSPILOT, "sessions", "export", session, "--format", "json"],
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    transcript = json.loads(exported.stdout.decode("utf-8", errors="strict"))
    for text in _strings(transcript) + _strings(events):
        text.encode("utf-8", errors="strict")
    tool = next(p for m in transcript["messages"] for p in m["parts"] if p["kind"] == "tool")
    assert tool["metadata"]["path"] == f"{empty_workspace}/caf\\xe9.py"
