"""The loop's configuration errors (named by file and key) and its secrets (API keys, the
environment's tokens), which reach neither the logs, the session store nor the model."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from daemon.config import SERVER_FIELDS, ConfigError
from daemon.runtime import Runtime
from daemon.scripted_model import ScriptedModel, Turn
from lsp_bridge import registry
from tools import Reply

from .conftest import LSPILOT
from .looping import Human, make_loop, script, workspace

__all__ = ["workspace"]  # the fixture, shared with the other test_loop_* files


def test_config_errors_name_the_file_and_key(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('model = "openai/x"\n[agents.review]\ncolour = "blue"\n')
    with pytest.raises(ConfigError, match=r"lspilot.toml: agents.review: unknown keys \['colour'\]"):
        Runtime.open(workspace).agent("review")
    (workspace / "lspilot.toml").write_text('modle = "openai/x"\n')
    with pytest.raises(ConfigError, match=r"lspilot.toml: unknown settings \['modle'\]"):
        Runtime.open(workspace)
    (workspace / "lspilot.toml").write_text("")
    with pytest.raises(ConfigError, match="no model configured"):
        Runtime.open(workspace).loop(Human())
    with pytest.raises(ConfigError, match="no agent called 'nope'"):
        Runtime.open(workspace).agent("nope")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[agents.build]\nmax_steps = "lots"',
            "agents.build.max_steps must be a positive integer, not 'lots'",
        ),
        ("[agents.build]\nmax_steps = 0", "agents.build.max_steps must be a positive integer, not 0"),
        ('[agents.build]\ntools = "read"', "agents.build.tools must be a list of tool ids"),
        ("[agents.build]\nmodel = 4", "agents.build.model must be a string, not 4"),
        (
            '[agents.build]\npermission = { edit = "maybe" }',
            "permission.edit: '\\*' = 'maybe'; expected one of",
        ),
        ('[agents.build]\npermission = "allow"', "agents.build.permission must be a table"),
        ('provider_options = "temperature=0"', "provider_options must be a table"),
        ("agents = 3", "agents must be a table"),
        ('permission = "allow"', "permission must be a table"),
        ("model = 5", "model must be a string, not 5"),
        ('[lsp]\nrequest_timeout = "30"', "\\[lsp\\] request_timeout must be a positive number, not '30'"),
        ("[lsp]\nservers = 3", "\\[lsp\\] servers must be a table"),
        ("[tools]\nbash = 'yes'", "unknown \\[tools\\] settings: \\['bash'\\]"),
        ("a = " + "[" * 2000 + "]" * 2000, "invalid TOML: nested too deeply"),  # tomllib recurses
        # the bash tool was dropped with a traceback, and the turn went on without it
        ("[tools.bash]\nkill_grace = 1", "unknown \\[tools.bash\\] setting 'kill_grace'; known:"),
        ("[tools.bash]\nmax_timeout_ms = '9'", "\\[tools.bash\\] max_timeout_ms must be a positive integer"),
        # ignored, or "false" taken as true
        ("[tools.edit]\nwarning = true", "\\[tools.edit\\]: unknown settings \\['warning'\\]; known:"),
        ("[tools.edit]\nwarnings = 'false'", "\\[tools.edit\\] warnings must be true or false, not 'false'"),
        # litellm sent these as they were: a connection error retried ~30 s, or the provider's 400
        ("[provider_options]\ntimeout = 'soon'", "provider_options.timeout must be a number, not 'soon'"),
        ("[provider_options]\nmax_tokens = 1.5", "provider_options.max_tokens must be an integer, not 1.5"),
        (
            "[provider_options]\nextra_headers = { X-Trace = 5 }",
            "extra_headers.X-Trace must be a string, not 5",
        ),
        # failed inside litellm ("'int' object has no attribute 'strip'"), retried as a server error
        ("[provider_options]\napi_key = 12345", "provider_options.api_key must be a string, not 12345"),
        # replaced what lspilot sends: no conversation, another model, no tools, a failing call
        ("[provider_options]\nmessages = []", "provider_options.messages cannot be set: lspilot sends the"),
        ("[provider_options]\nmodel = 'openai/x'", "provider_options.model cannot be set: set `model`"),
        ("[provider_options]\nstream = false", "provider_options.stream cannot be set: lspilot streams"),
        # a traceback, or taken as something else: one letter per word, "false" as true
        ("[lsp.servers]\nmine = 3", "lsp.servers.mine must be a table \\(\\[lsp.servers.mine\\]\\), not 3"),
        ("[lsp.servers.mine]\ncommand = 3", "lsp.servers.mine.command must be a list of strings"),
        (
            "[lsp.servers.pyright]\ncommand = 'pyright-langserver --stdio'",
            "lsp.servers.pyright.command must be a list of strings, e.g. \\[",
        ),
        ("[lsp.servers.pyright]\ncommand = []", "lsp.servers.pyright.command must be a list of strings"),
        ("[lsp.servers.pyright]\nenabled = 'false'", "lsp.servers.pyright.enabled must be true or false"),
        ("[lsp.servers.pyright]\nsettings = 1", "lsp.servers.pyright.settings must be a table, not 1"),
        ("[lsp.servers.pyright]\npublish_delay = '1'", "lsp.servers.pyright.publish_delay must be a number"),
        ("[lsp.servers.pyright]\ncmd = ['x']", "lsp.servers.pyright: unknown settings \\['cmd'\\]; known:"),
    ],
)
def test_config_values_of_the_wrong_type_are_named(workspace: Path, toml: str, message: str) -> None:
    model = "" if toml.startswith("model =") else 'model = "openai/x"'
    (workspace / "lspilot.toml").write_text(f"{model}\n{toml}\n")
    with pytest.raises(ConfigError, match=message) as raised:
        runtime = Runtime.open(workspace)
        runtime.cfg.bridge()
        runtime.loop(Human())
    assert str(raised.value).startswith(str(workspace / "lspilot.toml"))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("", "no model configured"),
        ('model = "openai/x"\n[agents.build]\ntools = ["raed"]', "agents.build.tools: no tool called raed"),
        ('model = "openai/x"\n[permission]\nread = "maybe"', "permission.read: '\\*' = 'maybe'"),
    ],
)
def test_a_refused_turn_leaves_no_session_behind(workspace: Path, toml: str, message: str) -> None:
    # Each refused `lspilot run` (or editor ask) left an empty, untitled session in the list.
    (workspace / "lspilot.toml").write_text(toml)
    runtime = Runtime.open(workspace)
    with pytest.raises(ConfigError, match=message):
        runtime.loop(Human())
    assert runtime.store.sessions(workspace.resolve()) == []
    runtime.store.close()


def test_a_config_file_starting_with_a_byte_order_mark_is_read(workspace: Path) -> None:
    # As Notepad and PowerShell save UTF-8; refused with "Invalid statement (at line 1, column 1)".
    (workspace / "lspilot.toml").write_bytes(
        b'\xef\xbb\xbfmodel = "openai/x"\r\n[permission]\r\nbash = "deny"\r\n'
    )
    raw = Runtime.open(workspace).cfg.raw
    assert (raw["model"], raw["permission"]) == ("openai/x", {"bash": "deny"})


def test_the_server_fields_checked_are_the_registrys() -> None:
    assert set(SERVER_FIELDS) == set(registry._FIELDS)  # pyright: ignore[reportPrivateUsage]


def test_api_keys_reach_neither_the_logs_nor_the_session_store(
    workspace: Path, fake: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # -v logs each request's options, custom headers included (a proxy's or gateway's key).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-0123456789")
    (workspace / "lspilot.toml").write_text(
        '[provider_options]\napi_key = "sk-from-the-config-0123456789"\n'
        'extra_headers = { "x-api-key" = "gateway-key-0123456789", "X-Trace" = "not a secret" }\n'
    )
    script(fake, Turn(error=500), Turn(text="the answer"))
    command = [LSPILOT, "-v", "run", "hi", "--root", str(workspace), "--model", "openai/scripted"]
    command += ["--api-base", fake.api_base]
    ran = subprocess.run(command, check=False, capture_output=True, text=True, env=os.environ, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "the answer\n")  # -v logs nothing on stdout either
    assert "X-Trace" in ran.stderr and "not a secret" in ran.stderr  # the headers were logged...
    assert "[redacted]" in ran.stderr  # ... their secrets were not
    data = tmp_path / "data"
    written = [ran.stderr, *(f.read_text(errors="replace") for f in data.rglob("*") if f.is_file())]
    for secret in ("sk-from-the-environment", "sk-from-the-config", "gateway-key"):
        assert not [text for text in written if secret in text], secret


async def test_tool_results_carry_no_secret_from_the_environment(
    workspace: Path, fake: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_fromTheEnvironment0123456789"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    (workspace / "deploy.txt").write_text(f"token: {token}\n")
    echo = {"command": "echo $GITHUB_TOKEN", "description": "Show the token"}
    script(fake, Turn(tool_calls=[("read", {"filePath": "deploy.txt"}), ("bash", echo)]), Turn(text="ok"))
    loop, _ = make_loop(workspace, fake, Human(Reply("once")))
    await loop.run_turn("show me the token")
    results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 2 and all("redacted]" in r for r in results), results
    assert token not in json.dumps(fake.requests[-1])
    stored = [f for f in (tmp_path / "data").rglob("*") if f.is_file() and token.encode() in f.read_bytes()]
    assert stored == []


def test_a_key_in_the_api_base_reaches_neither_the_logs_nor_the_session_store(
    workspace: Path, fake: ScriptedModel, tmp_path: Path
) -> None:
    # A gateway's key given in the api_base's query: -v logs each request's URL, and the
    # provider's error echoed the path it was sent (stored in the session, printed on stderr).
    script(fake, Turn(text="the answer"))
    api_base = f"{fake.api_base}?api-key=query-secret-0123456789"
    command = [LSPILOT, "-v", "run", "hi", "--root", str(workspace), "--model", "openai/scripted"]
    ran = subprocess.run(
        [*command, "--api-base", api_base],
        check=False,
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
    )
    assert "POST /v1?api-key=[redacted]/chat/completions" in ran.stderr  # logged, and in the error
    written = [
        ran.stderr,
        *(f.read_text(errors="replace") for f in (tmp_path / "data").rglob("*") if f.is_file()),
    ]
    assert not [text for text in written if "query-secret" in text]


def test_an_agent_naming_a_tool_that_does_not_exist_is_refused(workspace: Path) -> None:
    # A typo in an agent's tools left it without that tool, and nothing said so.
    (workspace / "lspilot.toml").write_text('model = "openai/x"\n[agents.build]\ntools = ["raed", "grep"]\n')
    with pytest.raises(ConfigError) as raised:
        Runtime.open(workspace).loop(Human())
    message = str(raised.value)
    assert message.startswith(
        f"{workspace / 'lspilot.toml'}: agents.build.tools: no tool called raed; tools: "
    )
    assert "read, skill, task" in message and "invalid" not in message


def test_a_rule_for_a_permission_that_does_not_exist_is_refused(workspace: Path) -> None:
    # A typo in a rule's permission (`bsh = "deny"`) protected nothing, and nothing said so.
    (workspace / "lspilot.toml").write_text('model = "openai/x"\n[permission]\nbsh = { "rm *" = "deny" }\n')
    with pytest.raises(ConfigError) as raised:
        Runtime.open(workspace).loop(Human())
    message = str(raised.value)
    assert message.startswith(f"{workspace / 'lspilot.toml'}: [permission] bsh: no such permission; ")
    assert "bash" in message
    (workspace / "lspilot.toml").write_text(
        'model = "openai/x"\n[permission]\n"web*" = "deny"\n[agents.plan.permission]\nlsp = "deny"\n'
    )
    Runtime.open(workspace).loop(Human())  # a pattern naming some, and agents' rules, are fine


def test_an_agents_own_model_wins_over_the_environments(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With LSPILOT_MODEL exported (as the docs and the editors' settings set it), the model an
    # agent's config names was never used.
    (workspace / "lspilot.toml").write_text(
        'model = "openai/x"\n[agents.review]\nmodel = "openai/reviewer"\n'
    )
    monkeypatch.setenv("LSPILOT_MODEL", "openai/from-env")
    runtime = Runtime.open(workspace)
    assert runtime.model(runtime.agent("review")).model == "openai/reviewer"
    assert runtime.model(runtime.agent("build")).model == "openai/from-env"
    assert runtime.model(runtime.agent("review"), "openai/asked").model == "openai/asked"
    monkeypatch.delenv("LSPILOT_MODEL")
    assert runtime.model(runtime.agent("build")).model == "openai/x"
