"""Tool JSON Schemas derived from a domain file, and a small fast argument checker.

Each generic operation has one schema shape (parameters and typed returns) filled in from the entity's
fields: id patterns, formats (email, date), enums, arrays, nested option objects, required and optional
keys. ``check_args`` is the environment's own validation: a fast subset of JSON Schema with messages that
name the argument, because full jsonschema validation on every call would dominate build time.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from agentjudge.dataset.domains import (
    CHANNELS,
    NOTIFY_CHANNELS,
    DomainSpec,
    EntitySpec,
    ToolSpec,
    load_domain,
)
from agentjudge.dataset.env import ToolError
from agentjudge.types import ToolSchema


def id_schema(ent: EntitySpec, description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^{ent.prefix}-[0-9]{{{ent.digits}}}$", "description": description}


def field_schema(dom: DomainSpec, ent: EntitySpec, fname: str) -> dict[str, Any]:
    f = ent.fields[fname]
    desc = f"The {ent.noun}'s {f.noun}."
    if f.gen == "ref":
        return id_schema(dom.entities[f.entity or ""], desc)
    bases: dict[str, dict[str, Any]] = {
        "person": {"type": "string", "minLength": 3},
        "email": {"type": "string", "format": "email"},
        "phone": {"type": "string", "pattern": "^\\+?[0-9][0-9 -]{6,19}$"},
        "code": {"type": "string", "pattern": f"^{f.prefix}-[0-9]{{4}}$"},
        "enum": {"type": "string", "enum": list(f.values)},
        "choice": {"type": "string", "minLength": 2},
        "date": {"type": "string", "format": "date"},
        "amount": {"type": "number", "minimum": 0},
        "int": {"type": "integer", "minimum": int(f.min)},
        "bool": {"type": "boolean"},
    }
    return {**bases[f.gen], "description": desc}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def first_enum(ent: EntitySpec) -> str | None:
    return next((n for n, f in ent.fields.items() if f.gen == "enum"), None)


def _record_schema(dom: DomainSpec, ent: EntitySpec) -> dict[str, Any]:
    props = {ent.id_key: id_schema(ent, f"The {ent.noun} id.")}
    props.update({n: field_schema(dom, ent, n) for n in ent.fields})
    for n, f in ent.fields.items():
        if f.only:  # null on the records that have none ("overdraft_limit" of a savings account)
            props[n] = {**props[n], "type": [props[n]["type"], "null"]}
            said = " and ".join(f"the {k} is {' or '.join(v)}" for k, v in f.only.items())
            props[n]["description"] += f" Null unless {said}."
    return _obj(props, list(props))


def _schemas(dom: DomainSpec, t: ToolSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """(parameters, returns) JSON Schemas for one tool, derived from its operation and entity."""
    ent = dom.entities[t.entity]
    eid = {ent.id_key: id_schema(ent, f"Identifier of the {ent.noun}.")}
    if t.op == "search":
        f = t.field or ""
        params = _obj(
            {
                f: field_schema(dom, ent, f),
                "include_archived": {
                    "type": "boolean",
                    "default": False,
                    "description": f"Also match archived {ent.plural}.",
                },
            },
            [f],
        )
        return params, _obj({**eid, f: field_schema(dom, ent, f)}, [ent.id_key, f])
    if t.op == "get":
        fields = {
            "type": "array",
            "items": {"type": "string", "enum": list(ent.fields)},
            "uniqueItems": True,
            "description": "Optional subset of fields to return; all fields by default.",
        }
        return _obj({**eid, "fields": fields}, [ent.id_key]), _record_schema(dom, ent)
    if t.op == "list":
        parent = dom.entities[ent.fields[t.field or ""].entity or ""]
        props: dict[str, Any] = {
            parent.id_key: id_schema(parent, f"The {parent.noun} whose {ent.plural} to list.")
        }
        status = t.filter or first_enum(ent)
        if status:
            props[status] = {
                **field_schema(dom, ent, status),
                "description": f"Only {ent.plural} with this {ent.fields[status].noun}.",
            }
        props["limit"] = {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
        ids = {"type": "array", "items": id_schema(ent, f"A {ent.noun} id.")}
        return _obj(props, [parent.id_key]), _obj(
            {ent.ids_key: ids, "count": {"type": "integer"}}, [ent.ids_key, "count"]
        )
    if t.op in ("update", "assign"):
        f = t.field or ""
        fs = field_schema(dom, ent, f)
        extra = (
            {"reason": {"type": "string", "maxLength": 500, "description": "Why the change is made (audit)."}}
            if t.op == "update"
            else {
                "options": _obj(
                    {
                        "notify_assignee": {"type": "boolean", "default": True},
                        "handover_note": {"type": "string"},
                    },
                    [],
                )
            }
        )
        params = _obj({**eid, f: fs, **extra}, [ent.id_key, f])
        return params, _obj(
            {**eid, f: fs, f"previous_{f}": fs, "updated": {"type": "boolean"}},
            [ent.id_key, f, f"previous_{f}", "updated"],
        )
    if t.op == "create":
        props = {n: field_schema(dom, ent, n) for n in t.fields}
        props["metadata"] = _obj(
            {
                "source": {"type": "string", "enum": ["phone", "email", "portal", "in_person"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
            },
            [],
        )
        out = {**eid, "created": {"type": "boolean"}, **{n: field_schema(dom, ent, n) for n in t.fields}}
        return _obj(props, list(t.fields)), _obj(out, list(out))
    if t.op == "notify":
        props = {
            **eid,
            "subject": {"type": "string", "minLength": 3, "maxLength": 200},
            "reference_ids": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "pattern": "^[A-Z]{2,5}-[0-9]{4,7}$"},
                "description": "Records the message is about.",
            },
            "delivery": _obj(
                {
                    "channel": {"type": "string", "enum": list(t.channels or NOTIFY_CHANNELS)},
                    "urgent": {"type": "boolean", "default": False},
                },
                [],
            ),
        }
        ret = {"notification_id": {"type": "string"}, **eid, "status": {"type": "string", "enum": ["queued"]}}
        return _obj(props, [ent.id_key, "subject", "reference_ids"]), _obj(ret, list(ret))
    if t.op == "annotate":
        props = {
            **eid,
            "note": {"type": "string", "minLength": 3, "maxLength": 2000},
            "visibility": {"type": "string", "enum": ["internal", "shared"], "default": "internal"},
        }
        ret = {"note_id": {"type": "string"}, **eid, "created": {"type": "boolean"}}
        return _obj(props, [ent.id_key, "note"]), _obj(ret, list(ret))
    if t.op == "message":
        props = {
            **eid,
            "channel": {"type": "string", "enum": list(t.channels or CHANNELS)},
            "template": {"type": "string", "enum": list(t.choices)},
            "language": {"type": "string", "pattern": "^[a-z]{2}$", "default": "en"},
        }
        ret = {"message_id": {"type": "string"}, **eid, "status": {"type": "string", "enum": ["sent"]}}
        return _obj(props, [ent.id_key, "channel", "template"]), _obj(ret, list(ret))
    if t.op == "aggregate":
        f = t.field or ""
        props = {
            ent.ids_key: {"type": "array", "minItems": 1, "items": id_schema(ent, f"A {ent.noun} id.")},
            "round_to": {"type": "integer", "minimum": 0, "maximum": 4, "default": 2},
        }
        ret = {"count": {"type": "integer"}, f"total_{f}": {"type": "number"}, f"max_{f}": {"type": "number"}}
        return _obj(props, [ent.ids_key]), _obj(ret, list(ret))
    raise AssertionError(t.op)


@cache
def tool_schemas(slug: str) -> dict[str, ToolSchema]:
    """Every tool of a domain as a ToolSchema (built once; treat the returned objects as read-only)."""
    dom = load_domain(slug)
    out: dict[str, ToolSchema] = {}
    for t in dom.tools:
        params, returns = _schemas(dom, t)
        out[t.name] = ToolSchema(name=t.name, description=t.desc, parameters=params, returns=returns)
    return out


# ---------------------------------------------------------------- argument checking

_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


@cache
def _pattern(p: str) -> re.Pattern[str]:
    return re.compile(p)


def check_args(value: Any, schema: dict[str, Any], where: str) -> None:
    """A small, fast subset of JSON Schema (type, enum, pattern, required, additionalProperties, items)."""
    typ = schema.get("type")
    if typ and (
        not isinstance(value, _TYPES[typ]) or (typ in ("integer", "number") and isinstance(value, bool))
    ):
        raise ToolError(f"{where}: expected {typ}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(f"{where}: {value!r} is not one of {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not _pattern(schema["pattern"]).search(value):
        raise ToolError(f"{where}: {value!r} does not match {schema['pattern']}")
    if typ == "array":
        if len(value) < schema.get("minItems", 0):
            raise ToolError(f"{where}: needs at least {schema['minItems']} item(s)")
        for i, v in enumerate(value):
            check_args(v, schema.get("items", {}), f"{where}[{i}]")
    if typ == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                raise ToolError(f"{where}: missing required argument {key!r}")
        for key, v in value.items():
            if key not in props:
                raise ToolError(f"{where}: unknown argument {key!r}")
            check_args(v, props[key], f"{where}.{key}")


# ---------------------------------------------------------------- descriptions that match the parameters

# words in a tool's name or description that name how it delivers, and the channel each names
_CHANNEL_WORDS = (
    (re.compile(r"\be-?mails?\b", re.I), "email"),
    (re.compile(r"\b(?:sms|text messages?|texts?)\b", re.I), "sms"),
    (re.compile(r"\b(?:letters?|post|postal)\b", re.I), "postal_mail"),
    (re.compile(r"\bpag(?:e|er|ing)\b", re.I), "pager"),
)
_FILTERED_BY = re.compile(r"filtered by ([a-z -]+?)(?:\.|,|$)", re.I)
_EXAMPLE_CODE = re.compile(r"e\.g\. ([A-Z]+)-\d+")


def _channel_enum(params: dict[str, Any], key: str) -> list[str] | None:
    props = params.get("properties", {})
    if key in props:
        return list(props[key].get("enum", []))
    nested = props.get("delivery", {}).get("properties", {})
    return list(nested["channel"].get("enum", [])) if "channel" in nested else None


def description_problems(slug: str, schema: ToolSchema) -> list[str]:
    """Where a tool's description promises what its parameters cannot do: a listing "filtered by status"
    whose only filter is a priority, an e-mail tool that also sends text messages, a text-message tool that
    offers e-mail and post, an example code with another prefix than the field's, a notification tool for
    a kind named after one of several roles it plays ("account manager" for every agent, also the agent
    handling a service order). A judge reading the schema is misled by each. Read from the schema as
    shipped in a record, so a file made by older code is checked for what it says."""
    dom = load_domain(slug)
    t = next((x for x in dom.tools if x.name == schema.name), None)
    if t is None:
        return []
    ent = dom.entities[t.entity]
    desc, params = schema.description, schema.parameters
    out: list[str] = []
    if t.op == "list":
        parent = dom.entities[ent.fields[t.field or ""].entity or ""].id_key
        filters = [k for k in params.get("properties", {}) if k not in (parent, "limit")]
        said = [m.group(1).strip().lower() for m in _FILTERED_BY.finditer(desc)]
        nouns = {ent.fields[k].noun.lower() for k in filters if k in ent.fields}
        for noun in said:  # "filtered by type" for a contract type
            if not any(n == noun or n.endswith(" " + noun) for n in nouns):
                found = ", ".join(sorted(nouns)) or "none"
                out.append(f"says 'filtered by {noun}' but its filter is {found}")
    if t.op in ("message", "notify"):
        enum = _channel_enum(params, "channel")
        words = f"{schema.name.replace('_', ' ')} {desc}"
        named = {channel for rx, channel in _CHANNEL_WORDS if rx.search(words)}
        if t.op == "notify":
            named &= {"pager"}  # a notification's channels are its own (email, chat, pager)
        if enum is not None and named and not set(enum) <= named | ({"email"} if t.op == "notify" else set()):
            out.append(f"names {sorted(named)} but sends by {enum}")
        if enum is not None and named - set(enum):
            out.append(f"names {sorted(named - set(enum))}, which its channels {enum} do not offer")
    if t.op == "search" and (m := _EXAMPLE_CODE.search(desc)) is not None:
        f = ent.fields[t.field or ""]
        if f.gen == "code" and m.group(1) != f.prefix:
            out.append(f"its example {m.group(0)!r} is not a {f.noun} ({f.prefix}-…)")
    if t.op == "notify":
        roles = {
            f.noun.lower()
            for other in dom.entities.values()
            for f in other.fields.values()
            if f.gen == "ref" and f.entity == t.entity
        }
        noun = ent.noun.lower()
        others = sorted(r for r in roles if r != noun and not re.search(rf"\b{re.escape(noun)}\b", r))
        if noun in roles and others and not all(r in desc.lower() for r in others):
            out.append(f"says {ent.noun!r}, one role of the {ent.plural}, who are also the {others[0]}")
    return out


def domain_description_problems(slug: str) -> list[str]:
    """``description_problems`` of every tool of a domain, as "tool: problem" lines."""
    return [f"{name}: {p}" for name, s in tool_schemas(slug).items() for p in description_problems(slug, s)]
