"""JSON schemas for the model, from each tool's pydantic ``Params``, adapted per provider.

OpenAI's strict mode wants every property required (optional ones nullable) and
``additionalProperties: false``; Gemini rejects ``additionalProperties``, ``$ref`` and ``title``.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from pydantic import BaseModel

from .base import Tool

Schema = dict[str, Any]


def provider_of(model: str) -> str:
    """litellm's provider prefix (``anthropic/claude-...`` -> anthropic), guessing for bare names."""
    if "/" in model:
        return model.split("/", 1)[0]
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt-")):
        return "openai"
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith("gemini"):
        return "gemini"
    return "openai"


def _inline(node: Any, defs: Schema) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), defs)
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("$defs", "title")}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]  # pyright: ignore[reportUnknownVariableType]
    return node


def _objects(node: Any) -> list[Schema]:
    """Every object schema in ``node`` (itself included)."""
    found: list[Schema] = []
    if isinstance(node, dict):
        if node.get("type") == "object":  # pyright: ignore[reportUnknownMemberType]
            found.append(node)  # pyright: ignore[reportUnknownArgumentType]
        for value in node.values():  # pyright: ignore[reportUnknownVariableType]
            found.extend(_objects(value))
    elif isinstance(node, list):
        for item in node:  # pyright: ignore[reportUnknownVariableType]
            found.extend(_objects(item))
    return found


def _nullable(schema: Schema) -> Schema:
    options = schema.get("anyOf")
    if isinstance(options, list) and any(o.get("type") == "null" for o in options):  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return schema
    keep = {k: schema[k] for k in ("description", "default") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in keep}
    return {"anyOf": [inner, {"type": "null"}], **keep}


def parameters(params: type[BaseModel], provider: str) -> Schema:
    """The JSON schema of ``params`` as ``provider`` accepts it (a fresh copy on each call)."""
    return json.loads(_parameters(params, provider))


@functools.cache
def _parameters(params: type[BaseModel], provider: str) -> str:  # pydantic's schema costs ~1 ms
    raw = params.model_json_schema()
    schema: Schema = _inline(raw, raw.get("$defs", {}))
    for obj in _objects(schema):
        properties: Schema = obj.setdefault("properties", {})
        if provider == "openai":
            required = set(obj.get("required", []))
            for name, prop in properties.items():
                if name not in required:
                    properties[name] = _nullable(prop)
            obj["required"] = list(properties)
            obj["additionalProperties"] = False
        elif provider in ("gemini", "vertex_ai"):
            obj.pop("additionalProperties", None)
        else:
            obj["additionalProperties"] = False
    return json.dumps(schema)


def tool_spec(tool: Tool[Any], provider: str) -> Schema:
    """The ``tools=[...]`` entry litellm takes (OpenAI function format, translated per provider)."""
    return {
        "type": "function",
        "function": {
            "name": tool.id,
            "description": tool.description,
            "parameters": parameters(tool.Params, provider),
        },
    }
