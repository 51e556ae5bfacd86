"""What a JSON schema may ask of the grammar engine, checked before it is compiled.

llguidance compiles a schema's regexes lazily: a pattern such as
``^a{1000000}$`` passes validation and compiles, then fails in the middle of
the reply, when the lexer first enters the string and builds a million
states (``lexer error: too many expressions constructed``), after stalling
the decode step for everyone. Counted repetition is where that cost lives
(``a{1000}`` already costs ~36 ms in the step that enters it; ``maxLength``
and ``minLength`` are compiled another way and stay cheap), so:

- a ``pattern`` (or a ``patternProperties`` key) whose counted repetitions,
  multiplied through their nesting (``(a{30}){30}`` is 900), exceed
  MAX_PATTERN_REPEAT is refused; ``minLength`` / ``maxLength`` say the same
  thing for whole strings without the cost;
- a schema longer than MAX_SCHEMA_CHARS as JSON text is refused (OpenAI's
  structured outputs stop at 120,000 characters of names and enum values).

Both are 400s naming the field the schema came in; llguidance's own limits
(structured.LIMITS) bound everything else.

Every reply a schema allows must also end: llguidance lets a JSON number run
on forever (a 135M model wrote digits until the context filled), so
``bound_numbers`` rewrites each number and integer node before it is
compiled, as llama.cpp's json-schema-to-grammar bounds them (at most 16
digits before the point): an integer without bounds of its own gets
``minimum`` / ``maximum`` ±(10^16 - 1), a number ±10^16 and ``multipleOf``
10^-NUMBER_FRACTION_DIGITS (at most 10 digits after the point, llguidance's
finest multipleOf; no exponent). A bound the schema sets itself is kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_PATTERN_REPEAT = 1000
MAX_SCHEMA_CHARS = 256 * 1024
INTEGER_BOUND = 10**16 - 1
NUMBER_BOUND = 1e16
NUMBER_FRACTION_DIGITS = 10
# Keys whose values are data, not schemas: never rewritten.
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
_COUNT = re.compile(r"\{(\d*)(,?)(\d*)\}")


class GrammarError(ValueError):
    """The grammar (a schema in it) is one LSE or the library refuses; the message says why."""


def check_schema_bounds(schema: Any) -> None:
    """GrammarError when ``schema`` exceeds MAX_SCHEMA_CHARS or holds a pattern
    past MAX_PATTERN_REPEAT."""
    size = len(json.dumps(schema))
    if size > MAX_SCHEMA_CHARS:
        raise GrammarError(f"the schema is {size} characters as JSON; LSE compiles at most {MAX_SCHEMA_CHARS}")
    for pattern in _patterns(schema):
        weight = repeat_weight(pattern)
        if weight > MAX_PATTERN_REPEAT:
            shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
            raise GrammarError(f"the pattern {shown!r} repeats up to {weight} times (counted repetitions "
                               f"multiplied through their nesting); LSE allows at most {MAX_PATTERN_REPEAT}: "
                               "bound a whole string with minLength / maxLength instead")


def _patterns(value: Any):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "pattern" and isinstance(item, str):
                yield item
            elif key == "patternProperties" and isinstance(item, dict):
                yield from (k for k in item if isinstance(k, str))
            yield from _patterns(item)
    elif isinstance(value, list):
        for item in value:
            yield from _patterns(item)


def repeat_weight(pattern: str) -> int:
    """The largest product of nested counted repetitions (``{m}``, ``{m,}``,
    ``{m,n}``: the larger number) over the atoms of ``pattern``; 1 without any."""
    groups = [1]  # the heaviest atom so far in each open group
    last = 1  # the weight of the atom a quantifier would apply to
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "{" and (m := _COUNT.match(pattern, i)) and (m.group(1) or m.group(3)):
            last *= max(int(m.group(1) or 0), int(m.group(3) or 0), 1)
            groups[-1] = max(groups[-1], last)
            i = m.end()
            continue
        if c == "(":
            groups.append(1)
            i += 1
            continue
        if c == ")" and len(groups) > 1:
            last = groups.pop()
        elif c == "\\":
            i = _escape_end(pattern, i) - 1
            last = 1
        elif c == "[":
            i = _class_end(pattern, i) - 1
            last = 1
        elif c in "*+?|":
            pass  # unbounded or optional: no counted cost of its own
        else:
            last = 1
        groups[-1] = max(groups[-1], last)
        i += 1
    return max(groups)


def _escape_end(pattern: str, i: int) -> int:
    """The index past the escape at ``i`` (``\\d``, ``\\u00e9``, ``\\p{L}``)."""
    if i + 2 < len(pattern) and pattern[i + 1] in "pP" and pattern[i + 2] == "{":
        close = pattern.find("}", i + 3)
        return len(pattern) if close < 0 else close + 1
    return min(i + 2, len(pattern))


def _class_end(pattern: str, i: int) -> int:
    """The index past the character class opening at ``i``."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return min(j + 1, len(pattern))


def bound_numbers(schema: Any) -> Any:
    """``schema`` with every number and integer node bounded (see the module
    docstring); the input is not modified."""
    if isinstance(schema, list):
        return [bound_numbers(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: value if key in _DATA_KEYS else bound_numbers(value) for key, value in schema.items()}
    kinds = out.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else set()
    if "number" in kinds:
        _bound(out, NUMBER_BOUND)
        if "multipleOf" not in out:
            out["multipleOf"] = 10.0 ** -NUMBER_FRACTION_DIGITS
    elif "integer" in kinds:
        _bound(out, INTEGER_BOUND)
    return out


def _bound(node: dict[str, Any], bound: float) -> None:
    if "minimum" not in node and "exclusiveMinimum" not in node:
        node["minimum"] = -bound
    if "maximum" not in node and "exclusiveMaximum" not in node:
        node["maximum"] = bound
