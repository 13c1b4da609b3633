"""`lspilot check-command 'CMD'`: the permission asks a bash command would raise, and the decision.

The same analysis the bash tool runs and the same rules the agent would meet (defaults, the
agent's, the project's and the user's config, remembered "always" approvals), so users can write
their ``[permission]`` rules against it. Nothing is run and nobody is asked.

Kept import-light: tools load only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools import Rule


def add_parser(subparsers: Any) -> None:
    """Register `lspilot check-command` on the main parser's subparsers."""
    check = subparsers.add_parser(
        "check-command",
        help="show the permission asks a bash command raises and the decision under the config",
    )
    check.add_argument("cmd", metavar="CMD", help="the shell command, as the agent would send it")
    check.add_argument("--root", default=".", help="workspace root and working directory (default: .)")
    check.add_argument("--agent", help="whose rules apply: build (default), plan, or one from the config")
    check.add_argument(
        "--json", action="store_true", help='print {"requests": [...], "decision": "allow"|"ask"|"deny"}'
    )
    check.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tools import MemorySession  # noqa: PLC0415
    from tools.bash import permission_requests  # noqa: PLC0415
    from tools.permission import evaluate  # noqa: PLC0415

    from . import config as configuration  # noqa: PLC0415
    from . import tooling  # noqa: PLC0415
    from .agents import AgentConfigError, configured_agents, pick_agent  # noqa: PLC0415
    from .terminal import TerminalAsker  # noqa: PLC0415

    if not args.cmd.strip():  # the bash tool refuses it ("The command is empty."): nothing to check
        print(
            "lspilot check-command: the command is empty; give the shell command to check, "
            "e.g. lspilot check-command 'git push'",
            file=sys.stderr,
        )
        return 2
    cfg = configuration.load(Path(args.root).resolve())
    try:
        agent = pick_agent(configured_agents(cfg.layers), args.agent)
    except AgentConfigError as error:
        raise configuration.ConfigError(str(error)) from None
    env = tooling.environment(
        cfg,
        MemorySession("check-command"),
        TerminalAsker(yes=False),
        agent=agent,
    )
    engine = env.permissions
    requests = permission_requests(args.cmd, env.root, env.root, [env.output_dir])
    actions = [[engine.action(r.permission, p) for p in r.patterns] for r in requests]
    flat = {action for per_request in actions for action in per_request}
    decision = "deny" if "deny" in flat else "ask" if "ask" in flat else "allow"
    # An agent whose tools leave bash out cannot run the command whatever the rules say.
    no_bash = agent.tools is not None and "bash" not in agent.tools
    if no_bash:
        decision = "deny"
    if args.json:
        items = [
            {
                "permission": r.permission,
                "patterns": r.patterns,
                "always": r.always,
                "alwaysRefused": [
                    {"pattern": p, "reason": why} for p, why in engine.always_scope(r).refused.items()
                ],
            }
            for r in requests
        ]
        print(json.dumps({"requests": items, "decision": decision}))
        return 0
    if no_bash:
        print(f"the agent {agent.name} has no bash tool (its tools: {', '.join(sorted(agent.tools or ()))})")
    for request, per_pattern in zip(requests, actions, strict=True):
        print(request.permission)
        for pattern, action in zip(request.patterns, per_pattern, strict=True):
            rule = evaluate(request.permission, pattern, engine.rules)
            approved = action == "allow" and (rule is None or rule.action != "allow")
            why = "an 'always' approval" if approved else _describe(rule)
            print(f"  {action:5}  {pattern}    ({why})")
        for line in engine.always_scope(request).lines():
            print(f"  {line}")
    print(f"decision: {decision}")
    return 0


def _describe(rule: Rule | None) -> str:
    if rule is None:
        return "no rule matches"
    return f"rule {rule.permission} {rule.pattern!r} = {rule.action} from {rule.source}"
