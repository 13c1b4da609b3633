"""The skill tool: project and user skills listed in its description and loaded by name."""

from __future__ import annotations

import os
from pathlib import Path

from tools import InitContext, load_registry

from .conftest import Harness, make_harness


def write_skill(folder: Path, name: str, description: str, body: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}")


async def harness_with_skills(tmp_path: Path) -> Harness:
    root = tmp_path / "ws"
    user = tmp_path / "user-config"
    write_skill(root / ".lspilot" / "skills", "release", "how this project cuts a release", "1. Bump.\n")
    write_skill(user / "skills", "release", "the user's generic release steps", "Never used.\n")
    write_skill(user / "skills", "review", "how the user likes code reviewed", "Be terse.\n")
    harness = make_harness(root, tmp_path / "data")
    harness.registry = load_registry(root, user / "tools", project=True)
    await harness.registry.initialize(InitContext(root, "build", {}))
    return harness


async def test_skills_are_listed_and_the_project_wins_over_the_user(tmp_path: Path) -> None:
    harness = await harness_with_skills(tmp_path)
    description = harness.registry.tools["skill"].description
    assert "- release: how this project cuts a release" in description
    assert "- review: how the user likes code reviewed" in description
    assert "generic release steps" not in description
    outcome = await harness.ok("skill", {"name": "release"})
    assert outcome.result is not None
    assert "1. Bump." in outcome.result.output and "description:" not in outcome.result.output
    assert str(harness.root / ".lspilot" / "skills" / "release") in outcome.result.output


async def test_an_unknown_skill_names_the_ones_there_are(tmp_path: Path) -> None:
    harness = await harness_with_skills(tmp_path)
    outcome = await harness.call("skill", {"name": "deploy"})
    assert outcome.error is not None and "release, review" in outcome.error


async def test_without_skills_the_description_says_so(harness: Harness) -> None:
    await harness.registry.initialize(InitContext(harness.root, "build", {}))
    assert "(none installed)" in harness.registry.tools["skill"].description


async def test_a_project_skill_leading_out_of_its_folder_is_not_loaded(tmp_path: Path) -> None:
    # A cloned repository's SKILL.md, a symlink to its .env or to a file outside the workspace,
    # went to the model whole with nothing asked; a link to /dev/zero was read without end.
    harness = await harness_with_skills(tmp_path)
    skills = harness.root / ".lspilot" / "skills"
    (harness.root / ".env").write_text("DB_PASSWORD=hunter2\n")
    (tmp_path / "outside.md").write_text("---\nname: outside\n---\nAWS_SECRET=x\n")
    for name, target in (("dotenv", harness.root / ".env"), ("notes", tmp_path / "outside.md")):
        (skills / name).mkdir()
        (skills / name / "SKILL.md").symlink_to(target)
    (skills / "zero").mkdir()
    (skills / "zero" / "SKILL.md").symlink_to("/dev/zero")
    (skills / "fifo").mkdir()
    os.mkfifo(skills / "fifo" / "SKILL.md")  # opened, it would wait for a writer
    write_skill(skills, "huge", "too long", "x" * 300_000)
    (skills / "inner").mkdir()  # a link that stays inside the skills folder is fine
    (skills / "inner" / "SKILL.md").symlink_to(skills / "release" / "SKILL.md")
    await harness.registry.initialize(InitContext(harness.root, "build", {}))
    description = harness.registry.tools["skill"].description
    for name in ("dotenv", "notes", "outside", "zero", "fifo", "huge"):
        assert f"- {name}:" not in description
        outcome = await harness.call("skill", {"name": name})
        assert outcome.error is not None and outcome.error.startswith(f"There is no skill {name!r}")
    assert "- release:" in description and "- review:" in description
