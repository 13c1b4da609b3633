"""Runs one language server and takes its whole process group down when lspilot goes away.

Usage: ``python -I -S _reaper.py LIFELINE_FD -- server-argv...``

lspilot starts this shim as the leader of a new process group and keeps the write end of the
lifeline pipe. When lspilot exits for any reason, even SIGKILL, the pipe reads EOF and the shim
kills the group, so no server (nor a child the server spawned, like tsserver) outlives lspilot.
The server inherits stdin/stdout/stderr directly: the shim never touches the JSON-RPC stream.
It uses only the standard library, so it starts in a few milliseconds.
"""

import os
import select
import shutil
import signal
import subprocess
import sys
import time


def _kill_group() -> None:
    try:
        os.killpg(0, signal.SIGTERM)
    except ProcessLookupError:
        return


def _remove_tmpdir() -> None:
    """The server's own temp dir (lspilot made it for this server alone)."""
    folder = os.environ.get("TMPDIR", "")
    if os.path.basename(folder).startswith("lspilot-"):
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    lifeline = int(sys.argv[1])
    argv = sys.argv[3:]
    try:
        server = subprocess.Popen(argv)
    except OSError as error:
        sys.stderr.write(f"lspilot: cannot start {argv[0]}: {error}\n")
        return 127
    # Let the server own the stdio pipes: when it dies, lspilot sees EOF at once.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        server_fd = os.pidfd_open(server.pid)
        watched = [lifeline, server_fd]
    except (AttributeError, OSError):
        watched, server_fd = [lifeline], -1
    while True:
        ready, _, _ = select.select(watched, [], [], None if server_fd >= 0 else 0.2)
        if server.poll() is not None:
            return server.returncode if server.returncode >= 0 else 128 - server.returncode
        if lifeline in ready and not os.read(lifeline, 1):
            # lspilot is gone: give the group a moment to exit cleanly, then kill it.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _kill_group()
            deadline = time.monotonic() + 2.0
            while server.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            _remove_tmpdir()
            os.killpg(0, signal.SIGKILL)
            return 1


if __name__ == "__main__":
    sys.exit(main())
