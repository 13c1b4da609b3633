"""An accepted change meets an editor buffer the user typed in after the change was proposed:
the accepted lines go on top of the user's edits (a three-way merge by lines, ``tools.diff.merge``)
when the two are apart, else nothing lands and the model is told which lines met."""

from __future__ import annotations

from tools.changes import Applied, FileChange
from tools.diff import Hunk, lines_of, merge

NUMBERED = "of the text the change was made on"


def onto_edited(change: FileChange, text: str, buffer: str, where: str) -> Applied:
    """``text``, what the user accepted of ``change``, merged into ``buffer`` (which the user
    edited since ``change.before``): "partial", with the merged text as ``written`` (not yet
    in the buffer) and a note for the model; or "rejected", naming the lines that conflict."""
    merged = merge(change.before or "", text, buffer)
    if merged.text is None:
        met = "; ".join(
            f"the user edited {lines_of(t)}, {'on' if _share(o, t) else 'next to'} the change of "
            + lines_of(o)
            for o, t in merged.conflicts
        )
        note = (
            f"{where} changed in the editor since the change was proposed, on or next to the lines "
            f"the accepted change edits: {met} (line numbers {NUMBERED}); nothing was applied. Read it again."
        )
        return Applied(change, None, "rejected", note)
    typed = ", ".join(lines_of(h) for h in merged.theirs)
    note = (
        f"The user also edited {where} since the change was proposed ({typed} {NUMBERED}); their "
        "edits were kept and the accepted change applied around them."
    )
    if not merged.theirs:  # saved from an editor that gives a document one line ending, say
        note = (
            f"The editor holds {where} with other line endings than the text the change was made "
            "on (nothing else differs); the accepted change was applied to the editor's text."
        )
    return Applied(change, merged.text, "partial", note, onto=buffer)


def _share(a: Hunk, b: Hunk) -> bool:
    """Whether two blocks change a base line in common (else they only touch)."""
    return a.old_start < b.old_start + b.old_lines and b.old_start < a.old_start + a.old_lines
