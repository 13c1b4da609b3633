"""The VS Code extension (editors/vscode): its node test suite against a real ``lspilot serve``
(the scripted model, basedpyright), strict ``tsc --noEmit``, and the ``.vsix`` build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, data_dir

EXTENSION = REPO / "editors" / "vscode"


def run(*command: str, timeout: float, env: dict[str, str] | None = None) -> str:
    """Run ``command`` in the extension's folder; fail with its output unless it exits 0."""
    done = subprocess.run(
        command,
        cwd=EXTENSION,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{output[-6000:]}"
    return output


@pytest.fixture(scope="module")
def npm() -> str:
    found = shutil.which("npm")
    assert found, "npm is missing: install Node.js 20 or newer (the VS Code extension is built with it)"
    if not (EXTENSION / "node_modules" / ".package-lock.json").exists():
        run(found, "ci", "--no-audit", "--no-fund", timeout=280)
    return found


def test_node_suite_against_the_daemon(npm: str) -> None:
    env = {
        "LSPILOT_PYTHON": sys.executable,
        "LSPILOT_BIN": str(Path(sys.executable).with_name("lspilot")),
        "LSPILOT_DATA_DIR": str(data_dir()),
    }
    output = run(npm, "test", timeout=280, env=env)
    assert "# fail 0" in output and "# pass 0" not in output, output[-4000:]


def test_typescript_is_strict_and_clean(npm: str) -> None:
    config = json.loads((EXTENSION / "tsconfig.json").read_text())
    assert config["compilerOptions"]["strict"] is True
    run(str(EXTENSION / "node_modules" / ".bin" / "tsc"), "--noEmit", "-p", ".", timeout=200)


def test_package_builds_a_vsix_with_the_bundle(npm: str) -> None:
    vsix = EXTENSION / "lspilot.vsix"
    vsix.unlink(missing_ok=True)
    run(npm, "run", "package", timeout=200)
    assert vsix.exists()
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert "extension/dist/extension.js" in names
    assert manifest["engines"]["vscode"].startswith("^"), "an exact engine refuses every newer VS Code"
    assert not any("node_modules" in name or name.endswith(".ts") for name in names), sorted(names)
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    wanted = {"ask", "cancel", "sessions", "restart", "acceptHunk", "rejectHunk", "acceptAll", "rejectAll"}
    wanted |= {"findReferences", "goToImplementation", "showCallers"}
    assert {f"lspilot.{name}" for name in wanted} <= commands
    settings = manifest["contributes"]["configuration"]["properties"]
    assert settings["lspilot.server.path"]["default"] == "lspilot" and "lspilot.trace.server" in settings


def e2e_tools() -> dict[str, str]:
    """CODE_SERVER and CHROMIUM for e2e/run.mjs: the environment's, else what ``scripts/dev test``
    set up in .cache/vscode-e2e (e2e/setup.sh). Missing is a failure, never a skip."""
    cache = REPO / ".cache" / "vscode-e2e"
    tools = {
        "CODE_SERVER": os.environ.get("CODE_SERVER") or str(cache / "code-server"),
        "CHROMIUM": os.environ.get("CHROMIUM") or str(cache / "chromium"),
    }
    for name, path in tools.items():
        assert os.access(path, os.X_OK), (
            f"{name}: {path} is missing: run `scripts/dev test`, which sets up code-server and Chromium "
            "in .cache/vscode-e2e (editors/vscode/e2e/setup.sh)"
        )
    return tools


def test_e2e_one_review_in_code_server(npm: str) -> None:
    """The packaged .vsix in a real VS Code (code-server + headless Chromium): a test-only driver
    extension asks, accepts the first hunk and rejects the second in the review diff."""
    tools = e2e_tools()
    run(npm, "run", "package", timeout=200)
    env = {"LSPILOT_PYTHON": sys.executable, "LSPILOT_DATA_DIR": str(data_dir()), **tools}
    output = run("node", "e2e/run.mjs", timeout=280, env=env)
    result = json.loads(output.strip().splitlines()[-1])
    assert result["ok"], result
    assert "undefined_pi" in result["text"] and "'circle'" in result["text"] and result["dirty"]
