"""The published request schemas (lse.runtime.openai.schema) against the validator
(lse.runtime.openai.request) and the spec's rows: every documented field is in the
schema, every valid value passes both, every invalid value both refuse."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from lse.runtime.openai import schema
from lse.runtime.errors import LseError
from lse.runtime.openai.request import parse_request
from lse.spec.rows import CHAT, COMPLETIONS, MISSING, RequestField
from lse.spec.table import all_rows

SCHEMAS = {CHAT: schema.CHAT_REQUEST, COMPLETIONS: schema.COMPLETION_REQUEST}
ENDPOINTS = {CHAT: "chat.completions", COMPLETIONS: "completions"}
BASE = {CHAT: {"messages": [{"role": "user", "content": "Hi"}]}, COMPLETIONS: {"prompt": "Hi"}}
# Refusals a JSON Schema does not state, each with where the server makes it.
NOT_IN_SCHEMA = {
    ("req.chat_template_kwargs", "chat_template_kwargs.reasoning_effort"): "the served model's levels",
    ("req.chat_template_kwargs", "chat_template_kwargs.enable_thinking"): "checked with the thinking level",
    ("req.reasoning", "reasoning.effort"): "checked with the thinking level",
}
# Single values a JSON Schema does not state, each with where the server refuses it.
NOT_STATED = {
    ("req.min_tokens", "9"): "a rule between two values (min_tokens <= max_tokens): the validator (controls.py)",
    ("req.response_format", "uniqueItems"): "the constrained decoder's keyword check (runtime/structured.py)",
    ("req.response_format", "'not'"): "the constrained decoder's keyword check (runtime/structured.py)",
    ("req.chat.tool_choice", "'nope'"): "a name not among the request's tools (runtime/openai/request.py)",
}


def _not_stated(row_id: str, value: Any) -> bool:
    return any(rid == row_id and mark in repr(value) for rid, mark in NOT_STATED)


# Documented in docs/spec/lse-api.md (parse_special) but with no row of its own in lse.spec.
SCHEMA_ONLY = {"parse_special"}


def request_fields() -> list[tuple[RequestField, str]]:
    return [(row, ep) for row in all_rows() if isinstance(row, RequestField) for ep in row.endpoints]


def body(endpoint: str, name: str, value: Any, with_: tuple = (), drop: tuple = ()) -> dict[str, Any]:
    out = {**BASE[endpoint], **dict(with_)}
    for field in drop:
        out.pop(field, None)
    if value is MISSING:
        out.pop(name, None)
    else:
        out[name] = value
    return out


def test_every_documented_field_is_in_the_schema_and_nothing_else() -> None:
    for endpoint, request_schema in SCHEMAS.items():
        documented = {row.name for row, ep in request_fields() if ep == endpoint}
        assert documented - set(request_schema["properties"]) == set()
        assert set(request_schema["properties"]) - documented <= SCHEMA_ONLY


@pytest.mark.parametrize("row,endpoint", request_fields(), ids=lambda x: getattr(x, "id", x))
def test_valid_values_pass_the_schema_and_the_validator(row: RequestField, endpoint: str) -> None:
    validator = Draft202012Validator(SCHEMAS[endpoint])
    for good in row.valid:
        sent = body(endpoint, row.name, good.value, good.with_)
        assert not list(validator.iter_errors(sent)), f"schema refuses documented valid {sent}"
        parse_request(sent, ENDPOINTS[endpoint], operator_cap=0)


@pytest.mark.parametrize("row,endpoint", request_fields(), ids=lambda x: getattr(x, "id", x))
def test_invalid_values_fail_the_schema_as_they_fail_the_server(row: RequestField, endpoint: str) -> None:
    validator = Draft202012Validator(SCHEMAS[endpoint])
    for bad in row.invalid:
        if (bad.status != 400 or (row.id, bad.param) in NOT_IN_SCHEMA or _not_stated(row.id, bad.value)
                or getattr(bad, "needs", ())):  # a refusal that depends on the served model
            continue
        sent = body(endpoint, row.name, bad.value, bad.with_, bad.drop)
        assert list(validator.iter_errors(sent)), f"schema accepts {sent}, which the server answers 400"
        try:
            parse_request(sent, ENDPOINTS[endpoint], operator_cap=0)
        except LseError as err:
            assert err.status == 400
        # Accepted here: a later stage refuses it (messages roles, thinking levels), as the rows say.


def test_the_bounds_are_the_validators() -> None:
    from lse.runtime.openai import request

    props = schema.CHAT_REQUEST["properties"]
    assert props["n"]["anyOf"][0]["maximum"] == request.MAX_N
    assert props["stop"]["anyOf"][0]["anyOf"][1]["maxItems"] == request.MAX_STOPS
    assert props["top_logprobs"]["anyOf"][0]["maximum"] == request.MAX_TOP_LOGPROBS
