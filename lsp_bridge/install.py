"""Finding and installing language servers into lspilot's data dir.

PyPI servers go into a dedicated venv per server, npm servers into a node_modules per server,
both from lock files shipped in ``servers/locks/<name>/`` (hashes / integrity checked), so users
get exactly the reviewed versions. System servers (clangd) are looked up on PATH.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import BridgeError, ServerNotInstalled
from .spec import ServerSpec

log = logging.getLogger(__name__)

LOCKS = Path(__file__).with_name("servers") / "locks"
STAMP = "lspilot-install.json"

State = Literal["installed", "outdated", "missing", "on PATH"]


class InstallError(BridgeError):
    """Installing a server failed; the message carries the installer's output tail."""


@dataclass(frozen=True)
class Status:
    spec: ServerSpec
    state: State
    command: list[str] | None

    @property
    def usable(self) -> bool:
        return self.command is not None


def server_dir(spec: ServerSpec, data_dir: Path) -> Path:
    return data_dir / "servers" / spec.name


def _lock_dir(spec: ServerSpec) -> Path:
    return LOCKS / spec.name


def _lock_digest(spec: ServerSpec) -> str:
    digest = hashlib.sha256(repr(spec.install.packages).encode())
    lock = _lock_dir(spec)
    if lock.is_dir():
        for file in sorted(lock.iterdir()):
            digest.update(file.name.encode() + file.read_bytes())
    return digest.hexdigest()


def _managed_bin(spec: ServerSpec, data_dir: Path) -> Path:
    base = server_dir(spec, data_dir)
    return base / ("venv/bin" if spec.install.kind == "pypi" else "node_modules/.bin")


def status(spec: ServerSpec, data_dir: Path) -> Status:
    """Where the server's executable is, if anywhere, and whether it is current."""
    if spec.install.kind == "system":
        for candidate in spec.install.candidates or spec.command[:1]:
            found = shutil.which(candidate)
            if found:
                return Status(spec, "on PATH", [found, *spec.command[1:]])
        return Status(spec, "missing", None)
    executable = _managed_bin(spec, data_dir) / spec.command[0]
    if executable.exists():
        stamp = server_dir(spec, data_dir) / STAMP
        current = stamp.exists() and json.loads(stamp.read_text()).get("lock") == _lock_digest(spec)
        return Status(spec, "installed" if current else "outdated", [str(executable), *spec.command[1:]])
    found = shutil.which(spec.command[0])
    if found:
        return Status(spec, "on PATH", [found, *spec.command[1:]])
    return Status(spec, "missing", None)


def install_command(spec: ServerSpec) -> str:
    if spec.install.kind == "system":
        return spec.install.hint or f"install {spec.command[0]} and put it on PATH"
    return f"lspilot servers install {spec.name}"


def missing_error(spec: ServerSpec) -> ServerNotInstalled:
    return ServerNotInstalled(f"language server {spec.name} is not installed; run: {install_command(spec)}")


async def install(spec: ServerSpec, data_dir: Path) -> Status:
    """Install (or update) a pypi/npm server atomically; system servers must be on PATH."""
    if spec.install.kind == "system":
        found = status(spec, data_dir)
        if not found.usable:
            raise missing_error(spec)
        return found
    target = server_dir(spec, data_dir)
    staging = target.with_name(target.name + ".installing")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        if spec.install.kind == "pypi":
            await _install_pypi(spec, staging)
        else:
            await _install_npm(spec, staging)
        (staging / STAMP).write_text(json.dumps({"lock": _lock_digest(spec)}))
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if spec.install.kind == "pypi":
        _relocate_venv(staging, target)
    return status(spec, data_dir)


async def _install_pypi(spec: ServerSpec, into: Path) -> None:
    await _run([sys.executable, "-m", "venv", str(into / "venv")], into)
    pip = [
        str(into / "venv/bin/python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    lock = _lock_dir(spec) / "requirements.txt"
    if lock.exists():
        await _run([*pip, "--require-hashes", "--no-deps", "-r", str(lock)], into)
    else:
        log.warning("%s has no lock file; installing %s unhashed", spec.name, spec.install.packages)
        await _run([*pip, *spec.install.packages], into)


async def _install_npm(spec: ServerSpec, into: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(f"installing {spec.name} needs npm (Node.js) on PATH")
    lock = _lock_dir(spec)
    flags = ["--no-audit", "--no-fund", "--loglevel=error"]
    if (lock / "package-lock.json").exists():
        for name in ("package.json", "package-lock.json"):
            shutil.copy(lock / name, into / name)
        await _run([npm, "ci", "--omit=dev", *flags], into)
    else:
        log.warning("%s has no lock file; installing %s unlocked", spec.name, spec.install.packages)
        await _run([npm, "install", "--prefix", str(into), *flags, *spec.install.packages], into)


def _relocate_venv(old: Path, new: Path) -> None:
    """Console scripts in a venv hard-code its path in their shebang; point them at the new one."""
    for script in (new / "venv/bin").iterdir():
        if not script.is_file() or script.is_symlink():
            continue
        head = script.read_bytes()[:512]
        if head.startswith(b"#!") and str(old).encode() in head:
            script.write_bytes(script.read_bytes().replace(str(old).encode(), str(new).encode()))


async def _run(argv: list[str], cwd: Path) -> None:
    log.info("running %s", " ".join(argv))
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    output, _ = await proc.communicate()
    if proc.returncode != 0:
        tail = "\n".join(output.decode(errors="replace").splitlines()[-20:])
        raise InstallError(f"`{' '.join(argv[:4])} ...` failed ({proc.returncode}):\n{tail}")
