"""How many words name "the command" for an "always" approval: ``git checkout``, ``npm run dev``.

``ARITY`` maps a command prefix to the number of words that identify it; the longest key that
starts a command wins, and unknown commands keep their first word. ``always_prefix`` says how
many of a command's words an "always" reply approves (``npm run dev --port 1`` -> 3 words), or
None when the prefix would contain an option (``git --no-pager log``): such a command can only be
approved exactly, since ``git *`` would approve far more than the user saw.
"""

from __future__ import annotations

from collections.abc import Sequence

_TWO = (
    "apt apt-get brew bun bundle cabal cargo composer conda deno dnf docker dotnet flatpak gem gh git "
    "go gradle helm hg kubectl make mvn nix npm npx pdm pip pip3 pipx pnpm podman poetry rustup snap "
    "stack svn swift systemctl terraform tofu uv yarn zypper aws gcloud az ansible-galaxy heroku "
    "firebase vercel netlify wrangler fly flyctl minikube kind vagrant pulumi just task nx turbo "
    "lerna rails rake mix dart flutter ng vue php artisan django-admin alembic tox nox hatch rye "
    "pixi mamba micromamba pyenv nvm fnm volta asdf mise rbenv launchctl service ufw firewall-cmd "
    "crontab sfdx ollama"
)

ARITY: dict[str, int] = {name: 2 for name in _TWO.split()}
ARITY.update(
    {
        # three words: the tool, a group, the action
        "aws s3": 3,
        "aws ec2": 3,
        "aws iam": 3,
        "aws lambda": 3,
        "az vm": 3,
        "bun run": 3,
        "bun x": 3,
        "cargo +nightly": 3,
        "conda env": 3,
        "deno task": 3,
        "docker builder": 3,
        "docker compose": 3,
        "docker container": 3,
        "docker image": 3,
        "docker network": 3,
        "docker system": 3,
        "docker volume": 3,
        "gcloud compute": 3,
        "gcloud config": 3,
        "gh issue": 3,
        "gh pr": 3,
        "gh release": 3,
        "gh repo": 3,
        "gh run": 3,
        "gh workflow": 3,
        "git bisect": 3,
        "git config": 3,
        "git lfs": 3,
        "git notes": 3,
        "git remote": 3,
        "git stash": 3,
        "git submodule": 3,
        "git worktree": 3,
        "go mod": 3,
        "go tool": 3,
        "helm repo": 3,
        "kubectl config": 3,
        "kubectl rollout": 3,
        "npm exec": 3,
        "npm run": 3,
        "npm run-script": 3,
        "pdm run": 3,
        "pip3 cache": 3,
        "pip cache": 3,
        "pnpm exec": 3,
        "pnpm run": 3,
        "poetry run": 3,
        "rustup toolchain": 3,
        "terraform state": 3,
        "terraform workspace": 3,
        "uv pip": 3,
        "uv run": 3,
        "uv tool": 3,
        "yarn run": 3,
        "yarn workspace": 4,
        # interpreters: the module or script is the command
        "bash": 2,
        "node": 2,
        "perl": 2,
        "python": 2,
        "python3": 2,
        "ruby": 2,
        "sh": 2,
        "zsh": 2,
        "python -m": 3,
        "python3 -m": 3,
        "uv run python": 4,
        "uv run python -m": 5,
        "docker compose exec": 4,
        "docker compose run": 4,
        "docker exec": 3,
        "docker run": 3,
        "kubectl exec": 3,
    }
)

_LONGEST = max(len(key.split()) for key in ARITY)


def always_prefix(words: Sequence[str | None]) -> int | None:
    """How many of ``words`` an "always" approval covers; None when only the exact command will do.

    ``words`` are the command's words with quoting removed (None for a word that is not known
    until the command runs). A prefix may not contain unknown words, nor options that are not
    part of the table's key (``python -m`` is a key; ``git --no-pager`` is not).
    """
    known: list[str] = []
    for word in words[:_LONGEST]:
        if word is None:
            break
        known.append(word)
    if not known:
        return None
    size, matched = 1, 1
    for length in range(len(known), 0, -1):
        if " ".join(known[:length]) in ARITY:
            size, matched = ARITY[" ".join(known[:length])], length
            break
    head = words[:size]
    if any(word is None or (i >= matched and word.startswith("-")) for i, word in enumerate(head)):
        return None
    return len(head)
