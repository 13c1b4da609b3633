"""skill: load a skill's instructions (``SKILL.md``) into the conversation when the task needs them.

Skills live in ``<workspace>/.lspilot/skills/<name>/SKILL.md`` and in the user's config dir
(``skills/<name>/SKILL.md``); a project skill wins over a user skill of the same name. Each file
starts with a front matter block naming it and saying when to use it; those lines are listed in
this tool's description so the model knows what it can load.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .base import InitContext, Tool, ToolError, ToolResult
from .context import ToolContext


class SkillParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="The skill to load, as listed in this tool's description")


@dataclass(frozen=True)
class SkillFile:
    name: str
    description: str
    path: Path
    inside: Path | None  # the folder a project skill must stay in (``skill_text``)


#: Longest SKILL.md read, in bytes: a skill is instructions, not a data file.
MAX_SKILL = 256 * 1024


def skill_text(path: Path, inside: Path | None) -> str | None:
    """A SKILL.md's text; None for one that is no regular file, is longer than ``MAX_SKILL``, or
    (``inside`` set: a project's skills) leads out of ``inside`` through a symlink, as a cloned
    repository's may, to its ``.env`` or a file outside the workspace, which ``read`` would ask for."""
    real = os.path.realpath(path)
    if inside is not None and not Path(real).is_relative_to(os.path.realpath(inside)):
        return None
    try:  # without blocking: a FIFO would stall the daemon as it starts
        with open(os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            data = file.read(MAX_SKILL + 1)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace") if len(data) <= MAX_SKILL else None


def parse(text: str) -> tuple[dict[str, str], str]:
    """The ``key: value`` front matter between ``---`` lines, and the body after it."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for index, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return meta, "".join(lines[index + 1 :]).lstrip("\n")
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip()] = value.strip().strip("\"'")
    return {}, text  # no closing line: not front matter


def discover(folders: list[tuple[Path, bool]]) -> dict[str, SkillFile]:
    """Skills by name from (folder, whether it is the project's); earlier folders win."""
    found: dict[str, SkillFile] = {}
    for folder, project in folders:
        for path in sorted(folder.glob("*/SKILL.md")):
            inside = folder if project else None
            text = skill_text(path, inside)
            if text is None:
                continue
            meta, _body = parse(text)
            name = meta.get("name") or path.parent.name
            description = meta.get("description") or "(no description)"
            found.setdefault(name, SkillFile(name, description, path, inside))
    return found


class Skill(Tool[SkillParams]):
    id = "skill"
    Params = SkillParams
    permission = "skill"

    def __init__(self, user_skills: Path | None = None) -> None:
        self.user_skills = user_skills
        self.skills: dict[str, SkillFile] = {}

    async def init(self, ctx: InitContext) -> None:
        project = [(ctx.root / ".lspilot" / "skills", True)]
        self.skills = discover([*project, *([(self.user_skills, False)] if self.user_skills else [])])
        listing = "\n".join(f"- {s.name}: {s.description}" for s in self.skills.values())
        self.description = (
            type(self).description + "\n\nAvailable skills:\n" + (listing or "(none installed)")
        )

    async def run(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        skill = self.skills.get(params.name)
        if skill is None:
            names = ", ".join(sorted(self.skills)) or "none are installed"
            raise ToolError(f"There is no skill {params.name!r}; available: {names}.")
        text = skill_text(skill.path, skill.inside)
        if text is None:
            raise ToolError(f"The skill {skill.name!r} cannot be read any more ({skill.path}).")
        _meta, body = parse(text)
        output = f'<skill name="{skill.name}" base="{skill.path.parent}">\n{body.rstrip()}\n</skill>'
        note = "\nFiles the skill mentions are relative to its base directory."
        return ToolResult(title=skill.name, output=output + note, metadata={"path": str(skill.path)})
