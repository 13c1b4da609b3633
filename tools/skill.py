"""skill: load a skill's instructions (``SKILL.md``) into the conversation when the task needs them.

Skills live in ``<workspace>/.lspilot/skills/<name>/SKILL.md`` and in the user's config dir
(``skills/<name>/SKILL.md``); a project skill wins over a user skill of the same name. Each file
starts with a front matter block naming it and saying when to use it; those lines are listed in
this tool's description so the model knows what it can load.
"""

from __future__ import annotations

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


def parse(path: Path) -> tuple[dict[str, str], str]:
    """The ``key: value`` front matter between ``---`` lines, and the body after it."""
    text = path.read_text(encoding="utf-8", errors="replace")
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


def discover(folders: list[Path]) -> dict[str, SkillFile]:
    """Skills by name; earlier folders win."""
    found: dict[str, SkillFile] = {}
    for folder in folders:
        for path in sorted(folder.glob("*/SKILL.md")):
            meta, _body = parse(path)
            name = meta.get("name") or path.parent.name
            description = meta.get("description") or "(no description)"
            found.setdefault(name, SkillFile(name, description, path))
    return found


class Skill(Tool[SkillParams]):
    id = "skill"
    Params = SkillParams
    permission = "skill"

    def __init__(self, user_skills: Path | None = None) -> None:
        self.user_skills = user_skills
        self.skills: dict[str, SkillFile] = {}

    async def init(self, ctx: InitContext) -> None:
        folders = [ctx.root / ".lspilot" / "skills", *([self.user_skills] if self.user_skills else [])]
        self.skills = discover(folders)
        listing = "\n".join(f"- {s.name}: {s.description}" for s in self.skills.values())
        self.description = (
            type(self).description + "\n\nAvailable skills:\n" + (listing or "(none installed)")
        )

    async def run(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        skill = self.skills.get(params.name)
        if skill is None:
            names = ", ".join(sorted(self.skills)) or "none are installed"
            raise ToolError(f"There is no skill {params.name!r}; available: {names}.")
        _meta, body = parse(skill.path)
        output = f'<skill name="{skill.name}" base="{skill.path.parent}">\n{body.rstrip()}\n</skill>'
        note = "\nFiles the skill mentions are relative to its base directory."
        return ToolResult(title=skill.name, output=output + note, metadata={"path": str(skill.path)})
