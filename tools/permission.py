"""The permission engine: rules ``{permission, pattern, action}``, asks, and remembered approvals.

Rules come in layers, later layers winning: the defaults, the agent's, the project config's, the
user config's (so a cloned repository's config cannot loosen what its user tightened). Within the
combined list the last matching rule wins; no match means ask. An "always" reply adds allow rules
for the request's ``always`` patterns, remembered per project (``approvals.py``), but never
overrides a rule that denies. Patterns and what they are matched with are compared in Unicode
normal form C (``nfc``): a rule typed ``café/*`` applies to a file whose name macOS stored
decomposed.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .base import ToolError

if TYPE_CHECKING:
    from .approvals import ApprovalStore

log = logging.getLogger(__name__)

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[Action, ...] = ("allow", "ask", "deny")

#: Permission types the engine knows; tools and config may use others.
PERMISSIONS = (
    "read",
    "edit",
    "bash",
    "external_directory",
    "webfetch",
    "lsp",
    "task",
    "skill",
    "doom_loop",
    "question",
    "todo",
    "protected",
)
#: Permissions that only rules naming them apply to: ``"*" = "allow"`` does not allow them.
#: ``protected`` guards what a later, allowed command runs (git hooks and configuration, jobs
#: scheduled for later: ``_protected.py``), so a broad allow of edits or commands never covers it.
EXPLICIT = frozenset({"protected"})


@dataclass(frozen=True)
class Rule:
    permission: str
    pattern: str
    action: Action
    source: str = "default"


#: Permissions whose patterns are files' (workspace-relative or absolute) paths.
NAMED = frozenset({"read", "edit", "lsp"})
#: Permissions whose patterns are paths.
PATHS = NAMED | {"external_directory"}

DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("*", "*", "allow"),
    Rule("read", "*.env", "ask"),
    Rule("read", "*.env.*", "ask"),
    Rule("read", "*.env.example", "allow"),
    Rule("edit", "*", "ask"),
    Rule("bash", "*", "ask"),
    Rule("external_directory", "*", "ask"),
    Rule("webfetch", "*", "ask"),
    Rule("doom_loop", "*", "ask"),
    Rule("protected", "*", "ask"),
)


#: A pattern's pieces: an escaped wildcard (``\\*``, ``\\?``), a wildcard, or literal text.
_PIECES = re.compile(r"\\[*?]|[*?]|[^*?\\]+|\\")
_PIECE_REGEX = {"*": ".*", "?": ".", "\\*": re.escape("*"), "\\?": re.escape("?")}


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C: where rules meet paths both sides are compared so, since
    the same name may be stored composed (``é``, as typed) or decomposed (``e`` + U+0301, as macOS
    writes names), and a rule must not miss a file for the form of its name."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


@lru_cache(maxsize=1024)
def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    body = nfc(pattern)
    tail = ""
    if body.endswith(" *"):  # "git log *" also matches the bare "git log"
        body, tail = body[:-2], "( .*)?"
    parts = (_PIECE_REGEX.get(piece) or re.escape(piece) for piece in _PIECES.findall(body))
    return re.compile("".join(parts) + tail, re.DOTALL)


def literal(text: str) -> str:
    """A pattern matching ``text`` only: its ``*`` and ``?`` escaped (``\\*``, ``\\?``)."""
    if "*" not in text and "?" not in text:  # most commands and paths: on every command analyzed
        return text
    return text.replace("*", "\\*").replace("?", "\\?")


def wildcard_match(text: str, pattern: str) -> bool:
    """Whole-string match where ``*`` is any run of characters and ``?`` any one character
    (``\\*`` and ``\\?`` are those characters themselves); both compared in ``nfc`` form."""
    if pattern == "*":
        return True
    if "*" not in pattern and "?" not in pattern:  # most rules name a tool or a path outright
        return text == pattern or nfc(text) == nfc(pattern)
    return _wildcard_regex(pattern).fullmatch(nfc(text)) is not None


@dataclass(frozen=True)
class AnyPattern:
    """Several patterns in one regex (``wildcard_any``)."""

    regex: re.Pattern[str]

    def fullmatch(self, text: str) -> re.Match[str] | None:
        """Where ``wildcard_match`` matches ``text`` for one of the patterns (``text`` in ``nfc``)."""
        return self.regex.fullmatch(nfc(text))


def wildcard_any(patterns: Iterable[str]) -> AnyPattern | None:
    """One regex whose ``fullmatch`` succeeds where ``wildcard_match`` does for any of ``patterns``
    (None when there are none): a file search tests each path once rather than once per rule."""
    bodies = sorted({_wildcard_regex(pattern).pattern for pattern in patterns})
    return AnyPattern(re.compile("|".join(f"(?:{body})" for body in bodies), re.DOTALL)) if bodies else None


def evaluate(permission: str, pattern: str, rules: Iterable[Rule]) -> Rule | None:
    """The last rule matching both the permission and the pattern (for an ``EXPLICIT``
    permission, only rules naming it)."""
    explicit = permission in EXPLICIT
    found: Rule | None = None
    for rule in rules:
        if (rule.permission == permission if explicit else wildcard_match(permission, rule.permission)) and (
            wildcard_match(pattern, rule.pattern)
        ):
            found = rule
    return found


class PermissionConfigError(ValueError):
    pass


def rules_from_config(table: Mapping[str, Any], source: str) -> list[Rule]:
    """Rules from a ``[permission]`` table: ``edit = "ask"`` or ``bash = {"git log *" = "allow"}``.
    A path pattern (``NAMED`` and ``external_directory``) starting with ``~/`` starts in the home
    folder, as the paths it is matched with do (``read = {"~/.ssh/*" = "deny"}``)."""
    rules: list[Rule] = []
    for permission, value in table.items():
        entries: Mapping[str, Any] = value if isinstance(value, Mapping) else {"*": value}  # pyright: ignore[reportUnknownVariableType]
        for pattern, action in entries.items():
            if action not in ACTIONS:
                raise PermissionConfigError(
                    f"{source}: permission.{permission}: {pattern!r} = {action!r}; "
                    f"expected one of {', '.join(ACTIONS)}"
                )
            text = str(pattern)
            if permission in PATHS and (text == "~" or text.startswith("~/")):
                text = os.path.expanduser(text)
            rules.append(Rule(permission, text, action, source))
    return rules


@dataclass(frozen=True)
class AlwaysScope:
    """What an "always" reply to a request does, worked out by the engine before it asks:
    ``remembered`` are the patterns it adds as allow rules, ``refused`` the patterns it cannot
    remember, each with why (``ApprovalStore.too_broad``): for those it counts as "once"."""

    remembered: list[str]
    refused: dict[str, str]

    def lines(self) -> list[str]:
        """What to show with the question, before the user answers."""
        shown = [f"'always' remembers: {', '.join(self.remembered)}"] if self.remembered else []
        return shown + [f"'always' counts as 'once' for {p}: {why}" for p, why in self.refused.items()]


@dataclass
class PermissionRequest:
    """An ask: ``patterns`` are what is asked for, ``always`` the rules an "always" reply adds.
    For a permission whose patterns name a file (``NAMED``), an ``always`` pattern that is one of
    the patterns approves that file only, whatever its name holds (a file called ``*.py``).
    ``scope`` is set by ``PermissionEngine.ask`` before an asker sees the request."""

    permission: str
    patterns: list[str]
    always: list[str]
    title: str
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    call_id: str | None = None
    scope: AlwaysScope = field(default_factory=lambda: AlwaysScope([], {}))

    def __post_init__(self) -> None:
        if self.permission in NAMED:
            self.always = [literal(p) if p in self.patterns else p for p in self.always]


@dataclass(frozen=True)
class Reply:
    kind: Literal["once", "always", "reject"]
    feedback: str | None = None


class Asker(Protocol):
    """Whoever drives the session answers: the editor, the terminal, or flags."""

    async def permission(self, request: PermissionRequest) -> Reply: ...

    async def question(self, question: str, options: list[str]) -> str: ...


class PermissionDenied(ToolError):
    """A configured rule denies this; asking again will not help."""


class PermissionRejected(ToolError):
    """The user said no. Without feedback the turn stops; with feedback the model reads it."""

    def __init__(self, request: PermissionRequest, feedback: str | None) -> None:
        self.feedback = feedback
        self.stops_turn = not feedback
        what = f"{request.permission} {', '.join(request.patterns)}"
        if feedback:
            message = f"The user rejected {what} and said: {feedback}"
        else:
            message = f"The user rejected {what}. Stop and wait for their instructions."
        super().__init__(message)


class PermissionEngine:
    """The rules of one session. A subagent's session has its ``parent``'s engine (the session
    that started it): what the parent's rules deny is denied here too, so a read-only agent cannot
    edit through a subagent whose own rules would let it."""

    def __init__(self, rules: Iterable[Rule], approvals: ApprovalStore, asker: Asker) -> None:
        self.rules = list(rules)
        self.approvals = approvals
        self.asker = asker
        self.parent: PermissionEngine | None = None

    def action(self, permission: str, pattern: str) -> Action:
        """What happens to ``pattern`` now: a configured deny (here or in a parent) always wins
        over an approval."""
        rule = evaluate(permission, pattern, self.rules)
        configured: Action = rule.action if rule else "ask"
        if configured != "deny" and self.inherited_denial(permission, pattern) is not None:
            return "deny"
        if configured == "ask" and evaluate(permission, pattern, self.approvals.rules):
            return "allow"
        return configured

    def inherited_denial(self, permission: str, pattern: str) -> Rule | None:
        """The rule of a parent session's engine that denies ``pattern`` (None without one)."""
        engine = self.parent
        while engine is not None:
            rule = evaluate(permission, pattern, engine.rules)
            if rule is not None and rule.action == "deny":
                return rule
            engine = engine.parent
        return None

    def denial_patterns(self, permission: str) -> list[str]:
        """The patterns of every rule for ``permission`` that denies, here or in a parent: a path
        none of them matches is not denied (a search checks only the paths that match one)."""
        own = [
            r.pattern for r in self.rules if r.action == "deny" and wildcard_match(permission, r.permission)
        ]
        return [*own, *self.parent.denial_patterns(permission)] if self.parent else own

    def denied_outright(self, permission: str) -> bool:
        """True when the last catch-all rule for ``permission`` denies and no later rule lets any
        pattern through (here or in a parent): a tool governed by it is then not offered to the
        model at all."""
        if self.parent is not None and self.parent.denied_outright(permission):
            return True
        relevant = [r for r in self.rules if wildcard_match(permission, r.permission)]
        if not relevant:
            return False
        last_catch_all = max((i for i, r in enumerate(relevant) if r.pattern == "*"), default=None)
        if last_catch_all is None or relevant[last_catch_all].action != "deny":
            return False
        return all(r.action == "deny" for r in relevant[last_catch_all:])

    async def ask(self, request: PermissionRequest) -> None:
        """Return when allowed; raise ``PermissionDenied`` or ``PermissionRejected`` otherwise."""
        actions = {pattern: self.action(request.permission, pattern) for pattern in request.patterns}
        denied = [p for p, a in actions.items() if a == "deny"]
        if denied:
            rule = evaluate(request.permission, denied[0], self.rules)
            if rule is None or rule.action != "deny":
                rule = self.inherited_denial(request.permission, denied[0])
            source = f" (rule {rule.permission} {rule.pattern!r} = deny in {rule.source})" if rule else ""
            raise PermissionDenied(
                f"Permission denied: {request.permission} {denied[0]}{source}. "
                "This is configured by the user; do not retry it, find another way or ask the user."
            )
        if all(a == "allow" for a in actions.values()):
            return
        request.scope = self.always_scope(request)
        reply = await self.asker.permission(request)
        if reply.kind == "reject":
            raise PermissionRejected(request, reply.feedback)
        if reply.kind == "always":
            await self.approvals.remember(
                request.permission, [*request.scope.remembered, *request.scope.refused]
            )

    def always_scope(self, request: PermissionRequest) -> AlwaysScope:
        """What "always" would do for ``request``: remember its ``always`` patterns (without any,
        what was asked, exactly) but those the approvals refuse as too broad."""
        remembered: list[str] = []
        refused: dict[str, str] = {}
        for pattern in request.always or [literal(p) for p in request.patterns]:
            if reach := self.approvals.too_broad(request.permission, pattern):
                refused[pattern] = f"it would allow everything in {reach}"
            elif pattern not in remembered:
                remembered.append(pattern)
        return AlwaysScope(remembered, refused)
