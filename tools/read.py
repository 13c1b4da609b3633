"""read: a file's lines (numbered, bounded), a directory's entries, or an image/PDF as attachment."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import mimetypes
import os
import shlex
from pathlib import Path
from stat import S_ISREG

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz, process

from lsp_bridge import BridgeError

from ._search_access import ReadCheck, read_check
from ._text import BOM, decode
from .base import Attachment, Tool, ToolError, ToolResult
from .context import FileStamp, ToolContext, read_file, shown_name, shown_path
from .truncate import fitting

MAX_LINE_CHARS = 2000
MAX_ENTRIES = 500
ATTACHMENT_MIMES = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
#: Larger text files are refused (grep or bash look into them); above INLINE_BYTES they are read
#: and numbered in a worker thread, so the daemon's other sessions and editors are not held up.
MAX_TEXT_BYTES = 64 * 1024 * 1024
INLINE_BYTES = 1024 * 1024
ENCODINGS = {
    "latin-1": "not valid UTF-8 and is shown as Latin-1",
    "utf-16-le": "UTF-16",
    "utf-16-be": "UTF-16",
}
NOISE = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".ruff_cache", ".cache"}


class ReadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filePath: str = Field(
        description="The file or directory to read (absolute, or relative to the workspace root)"
    )
    offset: int | None = Field(default=None, ge=1, description="The line number to start from (1-based)")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read (default 2000)")


#: Control bytes text has: tab, line breaks, form feed, backspace, escape (colours in logs).
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")


def is_binary(sample: bytes) -> bool:
    """A NUL byte (outside UTF-16 with a BOM), or, in what is not UTF-8, more than 5% control
    bytes (random bytes have ~10%). Bytes from 0x80 up are no sign: they are the letters of every
    8-bit encoding (CP1251, GBK, Latin-1) and of a UTF-8 file with one stray byte, which were
    refused as binary, and so could not be edited either."""
    if not sample or sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\0" in sample:
        return True
    try:
        sample.decode()
        return False
    except UnicodeDecodeError as error:
        if error.start >= len(sample) - 4:  # a multi-byte character cut at the sample's end
            return False
    controls = sum((b < 32 and b not in _TEXT_CONTROLS) or b == 127 for b in sample)
    return controls / len(sample) > 0.05


class Read(Tool[ReadParams]):
    id = "read"
    Params = ReadParams
    permission = "read"

    async def run(self, params: ReadParams, ctx: ToolContext) -> ToolResult:
        path = await ctx.authorize(params.filePath, "read", f"Read {params.filePath}")
        shown = ctx.relative(path)
        if path.is_dir():
            return _directory(path, shown, read_check(ctx, path, 0, contents=False), ctx.env.limits.max_bytes)
        unsaved = ctx.env.changes.unsaved(path)
        if unsaved is not None:  # open in the user's editor: what they see, saved or not
            result = _text(unsaved, path, shown, params, ctx)
            if not path.is_file() or path.read_bytes() != unsaved.encode():
                result.output += "\n(This is the editor's unsaved text of the file; the disk differs.)"
            ctx.env.session.record_read(path, FileStamp.of(unsaved.encode(), 0))
            return result
        try:
            found = path.stat()
        except FileNotFoundError:
            raise ToolError(_missing(path, ctx)) from None
        if not S_ISREG(found.st_mode):  # before anything opens it: a FIFO would block the daemon
            raise ToolError(f"{shown} is not a regular file (a device, FIFO or socket); read shows files.")
        mime = mimetypes.guess_type(path.name)[0] or ""
        if mime in ATTACHMENT_MIMES:
            return await asyncio.to_thread(_attachment, path, shown, mime)
        size = found.st_size
        if size > MAX_TEXT_BYTES:
            raise ToolError(
                f"{shown} is {size} bytes; read shows files up to {MAX_TEXT_BYTES} bytes. Use grep to "
                "find what you need in it, or bash (`head`, `tail`, `sed -n 'A,Bp'`) to see a part."
            )
        if size > INLINE_BYTES:  # reading and numbering it would hold up everything else
            result, stamp = await asyncio.to_thread(_file_text, path, shown, params, ctx)
        else:
            result, stamp = _file_text(path, shown, params, ctx)
        ctx.env.session.record_read(path, stamp)  # what the model saw, not a second read
        if ctx.env.bridge_started:
            ctx.env.background(_warm(ctx, path), f"warming {shown} in the language server")
        return result


async def _warm(ctx: ToolContext, path: Path) -> None:
    with contextlib.suppress(BridgeError):  # no server for this kind of file: nothing to warm
        await ctx.env.bridge.connections_for(path)


def _file_text(path: Path, shown: str, params: ReadParams, ctx: ToolContext) -> tuple[ToolResult, FileStamp]:
    try:
        data, stat = read_file(path)
    except OSError as error:
        raise ToolError(f"Cannot read {shown}: {error.strerror or error}") from None
    if is_binary(data[:8192]):
        raise ToolError(
            f"{shown} is a binary file ({len(data)} bytes); read cannot show it. "
            "Use bash (e.g. `file`, `xxd | head`) if you need to inspect it."
        )
    text, encoding = decode(data)  # as the edit tools decode it: what the model sees, they match
    result = _text(text.removeprefix(BOM), path, shown, params, ctx)
    if encoding != "utf-8":
        result.output += f"\n({shown} is {ENCODINGS[encoding]}; the edit tools keep it so.)"
        result.metadata["encoding"] = encoding
    return result, FileStamp.of(data, stat.st_mtime_ns)


def _text(text: str, path: Path, shown: str, params: ReadParams, ctx: ToolContext) -> ToolResult:
    # Numbered as editors, grep and the language servers number them (lsp_lines): str.splitlines
    # would also break at form feeds, U+2028 and others, and every later line would be off by one.
    # Only the lines up to the last one shown are split off: a file of millions of short lines
    # would otherwise become millions of strings (1.7 GB for 63 MB) to show five of them.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    total = text.count("\n") + (text[-1:] not in ("", "\n"))  # a final break starts no line
    start = (params.offset or 1) - 1
    if total and start >= total:
        raise ToolError(f"offset {start + 1} is past the end of {shown}, which has {total} lines.")
    limit = min(params.limit or ctx.env.limits.max_lines, ctx.env.limits.max_lines)
    out: list[str] = []
    cut_lines: list[int] = []
    size = 0
    end = start
    last = min(start + limit, total)
    for number, line in enumerate(text.split("\n", last)[start:last], start + 1):
        entry = f"{number:>6}\t{line}"
        if len(line) > MAX_LINE_CHARS:
            entry = f"{number:>6}\t{line[:MAX_LINE_CHARS]}... (line cut at {MAX_LINE_CHARS} characters)"
        length = len(entry) if entry.isascii() else len(entry.encode("utf-8", "surrogatepass"))
        if size + length + 1 > ctx.env.limits.max_bytes:  # bytes, as the limit is said
            break
        out.append(entry)
        size += length + 1
        end = number
        if len(line) > MAX_LINE_CHARS:
            cut_lines.append(number)
    if end < total:
        footer = f"(Showing lines {start + 1}-{end} of {total}. Use offset={end + 1} to continue reading.)"
    else:
        footer = f"(End of file: {total} line{'' if total == 1 else 's'}.)"
    if cut_lines:  # offset and limit count lines: they cannot show the rest of one
        n = cut_lines[0]
        footer += (
            f"\n({len(cut_lines)} line{'s were' if len(cut_lines) > 1 else ' was'} cut at "
            f"{MAX_LINE_CHARS} characters; read cannot show the rest. To see more of line {n}: "
            f"bash `sed -n {n}p {shlex.quote(shown)} | cut -c {MAX_LINE_CHARS + 1}-{3 * MAX_LINE_CHARS}`, "
            "or grep for the text you need.)"
        )
    body = "\n".join(out) if out else "(empty file)"
    return ToolResult(
        title=shown,
        output=f"{body}\n\n{footer}",
        metadata={
            "path": str(path),
            "lines": total,
            "from": start + 1,
            "to": end,
            "truncated": end < total or bool(cut_lines),
        },
    )


def _directory(path: Path, shown: str, reads: ReadCheck, max_bytes: int) -> ToolResult:
    """The entries, folders first; files a ``read`` rule denies are left out, as list leaves them."""
    entries = sorted(os.scandir(path), key=lambda e: (not e.is_dir(), e.name))
    files = set(reads.keep([os.fsencode(e.name) for e in entries if not e.is_dir()]))
    kept = [e for e in entries if e.is_dir() or os.fsencode(e.name) in files]
    names = [f"{shown_path(e.name)}/" if e.is_dir() else shown_path(e.name) for e in kept]
    listed = names[: fitting(names[:MAX_ENTRIES], max_bytes - 512)]  # by count and by size
    body = "\n".join(listed) or "(empty directory)"
    if len(names) > len(listed):
        body += f"\n... and {len(names) - len(listed)} more entries (use glob or list to narrow down)"
    for note in reads.notes("file", "files", shown_name):
        body += f"\n\n{note}"
    return ToolResult(
        title=f"{shown}/",
        output=body,
        metadata={"entries": len(names), "truncated": len(names) > len(listed), **reads.counts()},
    )


def _attachment(path: Path, shown: str, mime: str) -> ToolResult:
    """Run in a worker thread: up to 10 MB, from a file that may have been swapped meanwhile."""
    try:
        size = path.stat().st_size
        if size > MAX_ATTACHMENT_BYTES:
            raise ToolError(
                f"{shown} is {size} bytes; files over {MAX_ATTACHMENT_BYTES} bytes are not attached."
            )
        data, _stat = read_file(path)  # refuses what is no longer a regular file
    except OSError as error:
        raise ToolError(f"Cannot read {shown}: {error.strerror or error}") from None
    kind = "PDF" if mime == "application/pdf" else "Image"
    return ToolResult(
        title=shown,
        output=f"{kind} {shown} ({len(data)} bytes) is attached.",
        metadata={"mime": mime, "bytes": len(data), "truncated": False},
        attachments=[Attachment(mime, data, path.name)],
    )


def _missing(path: Path, ctx: ToolContext) -> str:
    folder = path.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    candidates = [folder / name for name in _listdir(folder)]
    if folder.is_relative_to(ctx.root):
        candidates += _same_name(ctx.root, path.name)
    wanted = ctx.relative(path)
    permissions = ctx.env.permissions
    choices = {  # not the names of files the read rules deny: read would not show even those
        shown: c for c in candidates if permissions.action("read", shown := ctx.relative(c)) != "deny"
    }
    best = process.extract(wanted, list(choices), scorer=fuzz.WRatio, limit=3, score_cutoff=60)
    message = f"File not found: {wanted}"
    if best:
        message += "\nDid you mean one of these?\n" + "\n".join(f"  {name}" for name, _score, _ in best)
    return message


def _listdir(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _same_name(root: Path, name: str, budget: int = 20000) -> list[Path]:
    """Files called ``name`` anywhere in the workspace (noise dirs skipped, bounded walk)."""
    found: list[Path] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in NOISE]
        seen += len(files)
        found += [Path(folder, f) for f in files if f.lower() == name.lower()]
        if seen > budget:
            break
    return found
