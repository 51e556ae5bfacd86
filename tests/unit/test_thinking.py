"""Thinking levels probed from chat templates (docs/spec/lse-api.md "Thinking levels")
and the resolution of a request's thinking fields against them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lse.runtime.chat.template import ChatTemplate, TemplateError, load_chat_template
from lse.runtime.chat.template_text import effort_candidates, tag_pairs
from lse.runtime.chat.thinking import (
    CompletionThinking, ThinkingInfo, instruction_of, probe_thinking, resolve_thinking,
    template_kwargs_for)
from lse.runtime.errors import LseError
from lse.fixtures.make_fixtures import build_fixture

XHIGH = ("Reasoning effort is set to xhigh. Please think carefully through the task, validate key "
         "assumptions, consider plausible alternatives, and prioritize correctness, consistency, "
         "and clarity in the final answer.")
LOW = ("Reasoning effort is set to low. Keep your thinking brief and focused, moving directly to "
       "the conclusion without unnecessary elaboration.")

# Effort levels without a toggle: high adds an instruction, low adds none.
EFFORT_ONLY = """
{%- if reasoning_effort is defined and reasoning_effort not in ['high', 'low'] %}
{{- raise_exception('unknown effort') }}
{%- endif %}
{%- if reasoning_effort is not defined or reasoning_effort == 'high' %}Think hard.
{% endif %}
{%- for m in messages %}[{{ m.role }}] {{ m.content.split('</think>')[-1] }}
{% endfor %}
{%- if add_generation_prompt %}[assistant] <think>
{% endif %}"""

# A toggle that is off unless asked for.
OFF_BY_DEFAULT = """{% for m in messages %}{{ m.content.split('</think>')[-1] }}
{% endfor %}{% if add_generation_prompt %}A: {% if enable_thinking is defined and enable_thinking %}<think>
{% endif %}{% endif %}"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixtures")
    for name in ("qwen38_like", "qwen36_like", "smollm_like", "no_template", "scripted_reasoning", "effort_levels"):
        build_fixture(name, root / name)
    return root


@pytest.fixture(scope="module")
def infos(root: Path) -> dict[str, ThinkingInfo]:
    out = {d.name: probe_thinking(load_chat_template(d)) for d in root.iterdir()}
    out["effort_only"] = probe_thinking(ChatTemplate(Path("effort.jinja"), EFFORT_ONLY))
    out["off_by_default"] = probe_thinking(ChatTemplate(Path("off.jinja"), OFF_BY_DEFAULT))
    return out


def level(id_: str, enable: bool | None, effort: str | None, instruction: str | None,
          opens: bool, default: bool) -> dict:
    return {"id": id_, "enable_thinking": enable, "reasoning_effort": effort,
            "instruction": instruction, "opens_reasoning": opens, "default": default}


# The spec's table: model → the thinking object.
SPEC_TABLE = {
    "qwen38_like": ("chat_template.jinja", "enable_thinking", "reasoning_effort", "xhigh", [
        level("none", False, None, None, False, False),
        level("xhigh", True, "xhigh", XHIGH, True, True),
        level("medium", True, "medium", None, True, False),
        level("low", True, "low", LOW, True, False)]),
    "qwen36_like": ("tokenizer_config.json", "enable_thinking", None, "on", [
        level("none", False, None, None, False, False),
        level("on", True, None, None, True, True)]),
    "smollm_like": ("chat_template.jinja", None, None, None, []),
    # Effort levels without a toggle, each with its own instruction.
    "effort_levels": ("chat_template.jinja", None, "reasoning_effort", "high", [
        level("high", None, "high", "Think thoroughly before answering.", True, True),
        level("low", None, "low", "Think briefly.", True, False)]),
}


@pytest.mark.parametrize("name", SPEC_TABLE)
def test_spec_thinking_table(infos, root: Path, name: str) -> None:
    source, toggle, effort, default, levels = SPEC_TABLE[name]
    assert infos[name].to_json() == {
        "supported": bool(levels), "source": str(root / name / source), "toggle": toggle,
        "effort": effort, "default_level": default, "levels": levels}


def test_no_template(infos) -> None:
    assert infos["no_template"].to_json() == {
        "supported": False, "source": None, "toggle": None, "effort": None,
        "default_level": None, "levels": []}
    assert infos["no_template"].think_markers is None


@pytest.mark.parametrize("name, prompts", [
    ("qwen38_like", {"none": "<|im_start|>assistant\n<think>\n\n</think>\n\n",
                     "xhigh": "<|im_start|>assistant\n<think>\n",
                     "medium": "<|im_start|>assistant\n<think>\n", "low": "<|im_start|>assistant\n<think>\n"}),
    ("qwen36_like", {"none": "<|im_start|>assistant\n<think>\n\n</think>\n\n",
                     "on": "<|im_start|>assistant\n<think>\n"}),
])
def test_generation_prompts(infos, name: str, prompts: dict[str, str]) -> None:
    assert {lv.id: lv.generation_prompt for lv in infos[name].levels} == prompts
    assert infos[name].think_markers == ("<think>", "</think>")


@pytest.mark.parametrize("name, markers, prompt, opens", [
    ("smollm_like", None, "<|im_start|>assistant\n", False),
    # no controls, but the template strips <think> blocks from past turns
    ("scripted_reasoning", ("<think>", "</think>"), "<|im_start|>assistant\n", False),
    ("effort_only", ("<think>", "</think>"), "[assistant] <think>\n", True),
])
def test_markers_and_base_prompt(infos, name, markers, prompt, opens) -> None:
    info = infos[name]
    assert (info.think_markers, info.generation_prompt, info.opens_reasoning) == (markers, prompt, opens)


def test_effort_only_template(infos) -> None:
    assert infos["effort_only"].to_json() == {
        "supported": True, "source": "effort.jinja", "toggle": None, "effort": "reasoning_effort",
        "default_level": "high", "levels": [level("high", None, "high", "Think hard.", True, True),
                                            level("low", None, "low", None, True, False)]}


def test_toggle_off_by_default(infos) -> None:
    assert [(lv.id, lv.default, lv.opens_reasoning) for lv in infos["off_by_default"].levels] == [
        ("none", True, False), ("on", False, True)]


@pytest.mark.parametrize("text, expected", [
    ("{% if reasoning_effort == 'a' %}{% elif 'b' == reasoning_effort %}{% endif %}", ["a", "b"]),
    ("{% if reasoning_effort in ['c', 'a'] or reasoning_effort not in ('d',) %}{% endif %}", ["c", "a", "d"]),
    ("{% set e = reasoning_effort | default('x') %}{% set f = e %}{% if f == 'y' %}{% endif %}", ["y"]),
    ("{% if other == 'z' %}{% endif %}{% if reasoning_effort is defined %}{% endif %}", []),
    ("{% if reasoning_effort == 'a' %}{% endif %}{% if reasoning_effort != 'a' %}{% endif %}", ["a"]),
])
def test_effort_candidates(text: str, expected: list[str]) -> None:
    assert effort_candidates(text) == expected


@pytest.mark.parametrize("body, baseline, expected", [
    ("<s>\nINSTR\n\nS</s>", "<s>\nS</s>", "INSTR"),
    ("<s>\nS</s>", "<s>\nS</s>", None),
    ("<s>\nReasoning: high\nS</s>", "<s>\nReasoning: low\nS</s>", "Reasoning: high"),
    ("<s>\n\n\nS</s>", "<s>\nS</s>", None),  # only whitespace added
])
def test_instruction_of(body: str, baseline: str, expected: str | None) -> None:
    assert instruction_of(body, baseline) == expected


def test_tag_pairs() -> None:
    assert tag_pairs("<a> <b> </a> <c> </b> <a> <|x|>") == [("<a>", "</a>"), ("<b>", "</b>")]


def test_template_refusing_system_is_probed_with_user_alone() -> None:
    text = ("{% if messages[0].role == 'system' %}{{ raise_exception('no system') }}{% endif %}"
            "{% for m in messages %}{{ m.content.split('</think>')[-1] }}{% endfor %}"
            "{% if add_generation_prompt %}{% if enable_thinking is defined and not enable_thinking %}"
            "A:{% else %}A:<think>{% endif %}{% endif %}")
    info = probe_thinking(ChatTemplate(Path("t"), text))
    assert [(lv.id, lv.default, lv.opens_reasoning) for lv in info.levels] == [
        ("none", False, False), ("on", True, True)]


def test_template_refusing_every_probe_fails_to_load() -> None:
    with pytest.raises(TemplateError, match=r"^chat template t: raise_exception on a probe conversation"):
        probe_thinking(ChatTemplate(Path("t"), "{{ raise_exception('never') }}"))


def test_toggle_that_raises_when_off_is_no_toggle() -> None:
    text = "{% if enable_thinking is defined and not enable_thinking %}{{ raise_exception('x') }}{% endif %}<think>"
    info = probe_thinking(ChatTemplate(Path("t"), text))
    assert (info.toggle, info.levels) == (None, ())


# ---------------------------------------------------------------------------
# Resolution, chat endpoint

OK_CASES = [
    ("qwen38_like", {}, "xhigh"),
    ("qwen38_like", {"reasoning_effort": None, "enable_thinking": None}, "xhigh"),  # null is not sent
    ("qwen38_like", {"chat_template_kwargs": {"other": 1}}, "xhigh"),
    ("qwen38_like", {"reasoning_effort": "low"}, "low"),
    ("qwen38_like", {"thinking_level": "medium"}, "medium"),
    ("qwen38_like", {"chat_template_kwargs": {"reasoning_effort": "none"}}, "none"),
    ("qwen38_like", {"reasoning": {"effort": "low", "summary": "auto"}}, "low"),
    ("qwen38_like", {"reasoning_effort": "low", "thinking_level": "low", "reasoning": {"effort": "low"}}, "low"),
    ("qwen38_like", {"enable_thinking": False}, "none"),
    ("qwen38_like", {"thinking": False}, "none"),
    ("qwen38_like", {"thinking": {"type": "disabled"}}, "none"),
    ("qwen38_like", {"chat_template_kwargs": {"enable_thinking": False}}, "none"),
    ("qwen38_like", {"enable_thinking": True}, "xhigh"),
    ("qwen38_like", {"thinking": {"type": "enabled", "budget_tokens": 100}}, "xhigh"),
    ("qwen38_like", {"enable_thinking": True, "thinking": True}, "xhigh"),
    ("qwen38_like", {"reasoning_effort": "low", "enable_thinking": True}, "low"),
    ("qwen38_like", {"reasoning_effort": "none", "thinking": {"type": "disabled"}}, "none"),
    ("qwen36_like", {}, "on"),
    ("qwen36_like", {"enable_thinking": True}, "on"),
    ("qwen36_like", {"enable_thinking": False}, "none"),
    ("qwen36_like", {"reasoning_effort": "on"}, "on"),
    ("qwen36_like", {"reasoning_effort": "none"}, "none"),
    ("smollm_like", {}, None),
    ("smollm_like", {"reasoning_effort": "none"}, None),
    ("smollm_like", {"enable_thinking": False}, None),
    ("smollm_like", {"thinking": {"type": "disabled"}, "reasoning_effort": "none"}, None),
    ("no_template", {"chat_template_kwargs": {"enable_thinking": False}}, None),
    ("effort_only", {"enable_thinking": True}, "high"),
    ("effort_only", {"reasoning_effort": "low", "enable_thinking": True}, "low"),
    ("off_by_default", {}, "none"),
    ("off_by_default", {"enable_thinking": True}, "on"),  # the default doesn't think: the first that does
]


@pytest.mark.parametrize("model, body, expected", OK_CASES)
def test_resolve(infos, model: str, body: dict, expected: str | None) -> None:
    resolved = resolve_thinking(body, infos[model], "chat.completions")
    assert (resolved.id if resolved is not None else None) == expected


Q38 = "levels: none, xhigh, medium, low"
NO_CONTROLS = "but this model's chat template has no thinking controls"
ERROR_CASES = [
    # unsupported_reasoning_effort, every effort spelling
    ("qwen38_like", {"reasoning_effort": "high"}, "unsupported_reasoning_effort", "reasoning_effort",
     f"reasoning_effort 'high' is not defined by this model's chat template; {Q38}"),
    ("qwen38_like", {"thinking_level": "minimal"}, "unsupported_reasoning_effort", "thinking_level",
     f"thinking_level 'minimal' is not defined by this model's chat template; {Q38}"),
    ("qwen38_like", {"chat_template_kwargs": {"reasoning_effort": "High"}}, "unsupported_reasoning_effort",
     "chat_template_kwargs.reasoning_effort",
     f"chat_template_kwargs.reasoning_effort 'High' is not defined by this model's chat template; {Q38}"),
    ("qwen38_like", {"reasoning": {"effort": "on"}}, "unsupported_reasoning_effort", "reasoning.effort",
     f"reasoning.effort 'on' is not defined by this model's chat template; {Q38}"),
    ("effort_only", {"reasoning_effort": "none"}, "unsupported_reasoning_effort", "reasoning_effort",
     "reasoning_effort 'none' is not defined by this model's chat template; levels: high, low"),
    # conflicting_thinking: two spellings, or level against switch
    ("qwen38_like", {"reasoning_effort": "low", "thinking_level": "medium"}, "conflicting_thinking",
     "thinking_level", "reasoning_effort 'low' and thinking_level 'medium' disagree"),
    ("qwen38_like", {"thinking_level": "low", "reasoning": {"effort": "xhigh"}}, "conflicting_thinking",
     "reasoning.effort", "thinking_level 'low' and reasoning.effort 'xhigh' disagree"),
    ("qwen38_like", {"reasoning_effort": "low", "chat_template_kwargs": {"reasoning_effort": "none"}},
     "conflicting_thinking", "chat_template_kwargs.reasoning_effort",
     "reasoning_effort 'low' and chat_template_kwargs.reasoning_effort 'none' disagree"),
    ("qwen38_like", {"enable_thinking": True, "thinking": False}, "conflicting_thinking", "thinking",
     "enable_thinking true and thinking false disagree"),
    ("qwen38_like", {"thinking": {"type": "enabled"}, "chat_template_kwargs": {"enable_thinking": False}},
     "conflicting_thinking", "chat_template_kwargs.enable_thinking",
     "thinking true and chat_template_kwargs.enable_thinking false disagree"),
    ("qwen38_like", {"reasoning_effort": "medium", "enable_thinking": False}, "conflicting_thinking",
     "enable_thinking", "reasoning_effort 'medium' turns thinking on but enable_thinking is false"),
    ("qwen38_like", {"reasoning_effort": "none", "thinking": True}, "conflicting_thinking", "thinking",
     "reasoning_effort 'none' turns thinking off but thinking is true"),
    ("smollm_like", {"reasoning_effort": "none", "enable_thinking": True}, "conflicting_thinking",
     "enable_thinking", "reasoning_effort 'none' turns thinking off but enable_thinking is true"),
    # thinking_unsupported
    ("smollm_like", {"reasoning_effort": "low"}, "thinking_unsupported", "reasoning_effort",
     f"reasoning_effort 'low' asks for thinking, {NO_CONTROLS}"),
    ("smollm_like", {"enable_thinking": True}, "thinking_unsupported", "enable_thinking",
     f"enable_thinking true asks for thinking, {NO_CONTROLS}"),
    ("smollm_like", {"thinking": {"type": "enabled"}}, "thinking_unsupported", "thinking",
     f"thinking true asks for thinking, {NO_CONTROLS}"),
    ("no_template", {"chat_template_kwargs": {"enable_thinking": True}}, "thinking_unsupported",
     "chat_template_kwargs.enable_thinking",
     f"chat_template_kwargs.enable_thinking true asks for thinking, {NO_CONTROLS}"),
    ("effort_only", {"enable_thinking": False}, "thinking_unsupported", "enable_thinking",
     "enable_thinking false was sent, but this model's chat template cannot switch thinking off; "
     "levels: high, low"),
    # invalid_thinking: wrong types, every spelling
    ("qwen38_like", {"reasoning_effort": 3}, "invalid_thinking", "reasoning_effort",
     "reasoning_effort must be a string (a thinking level id)"),
    ("qwen38_like", {"thinking_level": True}, "invalid_thinking", "thinking_level",
     "thinking_level must be a string (a thinking level id)"),
    ("qwen38_like", {"chat_template_kwargs": {"reasoning_effort": ["low"]}}, "invalid_thinking",
     "chat_template_kwargs.reasoning_effort",
     "chat_template_kwargs.reasoning_effort must be a string (a thinking level id)"),
    ("qwen38_like", {"reasoning": {"effort": 1}}, "invalid_thinking", "reasoning.effort",
     "reasoning.effort must be a string (a thinking level id)"),
    ("qwen38_like", {"reasoning": "low"}, "invalid_thinking", "reasoning", "reasoning must be an object"),
    ("qwen38_like", {"chat_template_kwargs": "x"}, "invalid_thinking", "chat_template_kwargs",
     "chat_template_kwargs must be an object"),
    ("qwen38_like", {"enable_thinking": "yes"}, "invalid_thinking", "enable_thinking",
     "enable_thinking must be a boolean"),
    ("qwen38_like", {"enable_thinking": 1}, "invalid_thinking", "enable_thinking",
     "enable_thinking must be a boolean"),
    ("qwen38_like", {"thinking": "on"}, "invalid_thinking", "thinking",
     'thinking must be a boolean or {"type": "enabled" | "disabled"}'),
    ("qwen38_like", {"thinking": {"type": "auto"}}, "invalid_thinking", "thinking",
     'thinking must be a boolean or {"type": "enabled" | "disabled"}'),
    ("smollm_like", {"chat_template_kwargs": {"enable_thinking": 0}}, "invalid_thinking",
     "chat_template_kwargs.enable_thinking", "chat_template_kwargs.enable_thinking must be a boolean"),
]


@pytest.mark.parametrize("model, body, kind, param, message", ERROR_CASES)
def test_resolve_errors(infos, model: str, body: dict, kind: str, param: str, message: str) -> None:
    with pytest.raises(LseError) as err:
        resolve_thinking(body, infos[model], "chat.completions")
    assert err.value.status == 400
    assert err.value.body() == {"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": kind,
        "levels": infos[model].level_ids}}


# ---------------------------------------------------------------------------
# Resolution, completions endpoint: types and agreement only

@pytest.mark.parametrize("model, body, split", [
    ("qwen38_like", {}, False),
    ("qwen38_like", {"enable_thinking": True}, True),
    ("qwen38_like", {"thinking": {"type": "disabled"}}, False),
    ("qwen38_like", {"reasoning_effort": "high"}, True),  # not checked against the template
    ("qwen38_like", {"reasoning_effort": "none"}, False),
    ("qwen38_like", {"reasoning_effort": "low", "enable_thinking": True}, True),
    ("smollm_like", {"chat_template_kwargs": {"enable_thinking": True}}, True),
    ("no_template", {"reasoning": {"effort": "minimal"}}, True),
])
def test_resolve_completions(infos, model: str, body: dict, split: bool) -> None:
    assert resolve_thinking(body, infos[model], "completions") == CompletionThinking(split_reasoning=split)


@pytest.mark.parametrize("body, kind, param", [
    ({"reasoning_effort": 1}, "invalid_thinking", "reasoning_effort"),
    ({"thinking": "yes"}, "invalid_thinking", "thinking"),
    ({"reasoning_effort": "low", "thinking_level": "high"}, "conflicting_thinking", "thinking_level"),
    ({"enable_thinking": False, "thinking": True}, "conflicting_thinking", "thinking"),
    ({"reasoning_effort": "none", "enable_thinking": True}, "conflicting_thinking", "enable_thinking"),
    ({"reasoning_effort": "high", "enable_thinking": False}, "conflicting_thinking", "enable_thinking"),
])
def test_resolve_completions_errors(infos, body: dict, kind: str, param: str) -> None:
    with pytest.raises(LseError) as err:
        resolve_thinking(body, infos["smollm_like"], "completions")
    assert (err.value.kind, err.value.param) == (kind, param)


def test_unknown_endpoint(infos) -> None:
    with pytest.raises(ValueError, match="unknown endpoint 'embeddings'"):
        resolve_thinking({}, infos["qwen38_like"], "embeddings")


@pytest.mark.parametrize("model, level_id, kwargs", [
    ("qwen38_like", "none", {"enable_thinking": False}),
    ("qwen38_like", "low", {"enable_thinking": True, "reasoning_effort": "low"}),
    ("qwen36_like", "on", {"enable_thinking": True}),
    ("effort_only", "high", {"reasoning_effort": "high"}),
])
def test_template_kwargs_for(infos, model: str, level_id: str, kwargs: dict) -> None:
    assert template_kwargs_for(infos[model].level(level_id)) == kwargs


def test_template_kwargs_for_none() -> None:
    assert template_kwargs_for(None) == {}
