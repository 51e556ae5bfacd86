"""Finding the chat template in the model's files, rendering it the way HF
templates expect, and normalising request messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lse.runtime.chat.template import (
    ChatTemplate, TemplateError, TemplateRaised, load_chat_template, normalize_messages)
from lse.runtime.errors import LseError
from lse.fixtures.make_fixtures import FIXTURES_DIR, build_fixture


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fixtures")

    def get(name: str) -> Path:
        return root / name if (root / name).is_dir() else build_fixture(name, root / name)
    return get


CHATML = (FIXTURES_DIR / "chatml/template.jinja").read_text()


def tpl(text: str, **tokens: str) -> ChatTemplate:
    return ChatTemplate(Path("t.jinja"), text, **tokens)


# fixture, the file the template comes from, the fixtures/ file it holds
@pytest.mark.parametrize("name, source, text_file", [
    ("qwen38_like", "chat_template.jinja", "qwen38_like/template.jinja"),
    ("qwen36_like", "tokenizer_config.json", "qwen36_like/template.jinja"),
    ("list_template", "tokenizer_config.json", "chatml/template.jinja"),
    ("json_template", "chat_template.json", "chatml/template.jinja"),
    ("smollm_like", "chat_template.jinja", "chatml/template.jinja"),
])
def test_fixture_template_sources(fixture, name: str, source: str, text_file: str) -> None:
    template = load_chat_template(fixture(name))
    assert template is not None
    assert template.source == fixture(name) / source
    assert template.text == (FIXTURES_DIR / text_file).read_text()
    assert (template.bos_token, template.eos_token) == (None, "<|im_end|>")


def test_no_template_is_none(fixture) -> None:
    assert load_chat_template(fixture("no_template")) is None


def test_broken_template_names_file_and_construct(fixture) -> None:
    with pytest.raises(TemplateError) as err:
        load_chat_template(fixture("broken_template"))
    path = fixture("broken_template") / "chat_template.jinja"
    assert str(err.value) == (
        f"chat template {path}: line 5: Encountered unknown tag 'endfo'. Jinja was looking for "
        "the following tags: 'endfor' or 'else'. The innermost block that needs to be closed is 'for'.")


def write_model(root: Path, files: dict[str, object]) -> Path:
    for name, content in files.items():
        (root / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return root


# the files present → the one the template is read from
@pytest.mark.parametrize("present, expected", [
    (("jinja", "tok", "json"), "chat_template.jinja"),
    (("tok", "json"), "tokenizer_config.json"),
    (("json",), "chat_template.json"),
    (("jinja",), "chat_template.jinja"),
])
def test_source_order(tmp_path: Path, present: tuple[str, ...], expected: str) -> None:
    files = {"jinja": ("chat_template.jinja", "J"),
             "tok": ("tokenizer_config.json", {"chat_template": "T"}),
             "json": ("chat_template.json", {"chat_template": "C"})}
    write_model(tmp_path, dict(files[k] for k in present))
    template = load_chat_template(tmp_path)
    assert template is not None and template.source.name == expected
    assert template.text == {"chat_template.jinja": "J", "tokenizer_config.json": "T",
                             "chat_template.json": "C"}[expected]


def test_tokenizer_config_without_template_falls_through(tmp_path: Path) -> None:
    write_model(tmp_path, {"tokenizer_config.json": {"eos_token": "</s>"},
                           "chat_template.json": {"chat_template": "C"}})
    template = load_chat_template(tmp_path)
    assert template is not None
    assert (template.source.name, template.eos_token) == ("chat_template.json", "</s>")


@pytest.mark.parametrize("files, message", [
    ({"tokenizer_config.json": {"chat_template": [{"name": "tool_use", "template": "x"}]}},
     "tokenizer_config.json: chat_template is a list with no entry named 'default' (entries: tool_use)"),
    ({"tokenizer_config.json": {"chat_template": 3}},
     "tokenizer_config.json: chat_template must be a string or a list of {name, template}"),
    ({"tokenizer_config.json": "{not json"}, "tokenizer_config.json: cannot be read as JSON"),
    ({"chat_template.json": {"chat_template": None}}, "chat_template.json: chat_template must be a string"),
    ({"chat_template.jinja": "{{ 1 + }}"}, "chat_template.jinja: line 1: unexpected 'end of print statement'"),
])
def test_unreadable_templates(tmp_path: Path, files: dict[str, object], message: str) -> None:
    write_model(tmp_path, files)
    with pytest.raises(TemplateError) as err:
        load_chat_template(tmp_path)
    assert message in str(err.value)
    assert str(tmp_path) in str(err.value)


@pytest.mark.parametrize("value, expected", [
    ("<s>", "<s>"), ({"content": "<s>", "special": True}, "<s>"), (None, None), (7, None)])
def test_special_token_forms(tmp_path: Path, value: object, expected: str | None) -> None:
    write_model(tmp_path, {"tokenizer_config.json": {"chat_template": "x", "bos_token": value,
                                                     "eos_token": value}})
    template = load_chat_template(tmp_path)
    assert template is not None and (template.bos_token, template.eos_token) == (expected, expected)


# template text, render kwargs, exact output
@pytest.mark.parametrize("text, kwargs, expected", [
    ("{{ messages | tojson }}", {}, '[{"role": "user", "content": "é"}]'),
    ("{{ {'a': [1]} | tojson(indent=2) }}", {}, '{\n  "a": [\n    1\n  ]\n}'),
    ("{{ bos_token }}|{{ eos_token }}", {}, "<s>|</s>"),
    ("{{ add_generation_prompt }}", {"add_generation_prompt": False}, "False"),
    ("{{ tools | length }}", {"tools": [{"type": "function"}]}, "1"),
    ("{{ tool_choice is defined }}", {}, "False"),
    ("{{ tool_choice }}", {"tool_choice": "auto"}, "auto"),
    ("{{ enable_thinking is defined }}", {}, "False"),
    ("{{ enable_thinking }}", {"enable_thinking": True}, "True"),
    ("{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}x{% endfor %}.", {}, "."),
    ("{% if true %}\n  a\n{% endif %}\n", {}, "  a\n"),  # trim_blocks, lstrip_blocks
    ("{{ strftime_now('%Y') | length }}", {}, "4"),
])
def test_render_environment(text: str, kwargs: dict, expected: str) -> None:
    template = tpl(text, bos_token="<s>", eos_token="</s>")
    assert template.render([{"role": "user", "content": "é"}], **kwargs) == expected


def test_raise_exception_raises_template_raised() -> None:
    with pytest.raises(TemplateRaised, match="^no system role$"):
        tpl("{{ raise_exception('no system role') }}").render([])


@pytest.mark.parametrize("text", [
    "{{ ''.__class__.__mro__ }}",       # the sandbox refuses dunder access
    "{{ messages.append(1) }}",         # immutable: no list mutation
    "{{ messages[0].content + 1 }}",    # a type error inside the template
])
def test_render_failures_are_template_errors(text: str) -> None:
    with pytest.raises(TemplateError, match=r"^chat template t\.jinja failed to render: "):
        tpl(text).render([{"role": "user", "content": "x"}])


def test_chatml_renders_a_conversation() -> None:
    out = tpl(CHATML).render([{"role": "user", "content": "Hi"}])
    assert out == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                   "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


# ---------------------------------------------------------------------------
# normalize_messages

CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}


@pytest.mark.parametrize("given, expected", [
    ([{"role": "user", "content": "hi"}], [{"role": "user", "content": "hi"}]),
    ([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
     [{"role": "user", "content": "a\nb"}]),
    ([{"role": "system", "content": "s", "name": "n", "extra": 1}],
     [{"role": "system", "content": "s", "name": "n"}]),
    ([{"role": "assistant", "content": None, "tool_calls": [CALL]}],
     [{"role": "assistant", "content": "",
       "tool_calls": [{"type": "function", "id": "call_1",
                       "function": {"name": "f", "arguments": {"a": 1}}}]}]),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"b": 2}}}]}],
     [{"role": "assistant", "content": "",
       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"b": 2}}}]}]),
    ([{"role": "assistant", "content": "x", "reasoning_content": "r"}],
     [{"role": "assistant", "content": "x", "reasoning_content": "r"}]),
    ([{"role": "tool", "content": "22C", "tool_call_id": "call_1"}],
     [{"role": "tool", "content": "22C", "tool_call_id": "call_1"}]),
])
def test_normalize_messages(given: list, expected: list) -> None:
    assert normalize_messages(given) == expected


USER_HI = {"role": "user", "content": "hi"}


@pytest.mark.parametrize("given, expected", [
    # developer alone: the system turn
    ([{"role": "developer", "content": "Be brief."}, USER_HI], [{"role": "system", "content": "Be brief."}, USER_HI]),
    # system then developer (and the reverse): one system turn, in the order sent
    ([{"role": "system", "content": "S", "name": "ops"}, {"role": "developer", "content": "D"}, USER_HI],
     [{"role": "system", "content": "S\n\nD", "name": "ops"}, USER_HI]),
    ([{"role": "developer", "content": [{"type": "text", "text": "D"}]}, {"role": "system", "content": "S"},
      USER_HI], [{"role": "system", "content": "D\n\nS"}, USER_HI]),
    # a developer message later in the conversation: a system message in its place
    ([USER_HI, {"role": "developer", "content": "D"}, USER_HI], [USER_HI, {"role": "system", "content": "D"}, USER_HI]),
    # two system messages without a developer message: as sent
    ([{"role": "system", "content": "A"}, {"role": "system", "content": "B"}, USER_HI],
     [{"role": "system", "content": "A"}, {"role": "system", "content": "B"}, USER_HI]),
])
def test_developer_is_the_system_turn(given: list, expected: list) -> None:
    assert normalize_messages(given) == expected


def test_developer_renders_as_the_templates_system_turn() -> None:
    out = tpl(CHATML).render(normalize_messages([{"role": "developer", "content": "Be brief."}, USER_HI]))
    assert out == ("<|im_start|>system\nBe brief.<|im_end|>\n"
                   "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("given, message", [
    ("hi", "messages must be an array"),
    ([], "messages must contain at least one message"),
    (["hi"], "messages[0] must be an object"),
    ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
      {"role": "robot", "content": "c"}],
     "messages[2].role must be one of system, developer, user, assistant, tool"),
    ([{"content": "a"}], "messages[0].role must be one of system, developer, user, assistant, tool"),
    ([{"role": "developer"}], "messages[0].content is required for role developer"),
    ([{"role": "user"}], "messages[0].content is required for role user"),
    ([{"role": "user", "content": 5}], "messages[0].content must be a string or an array of text parts"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
     'messages[0].content[0] must be a text part ({"type": "text", "text": ...}); LSE models take text only'),
    ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content[0].text must be a string"),
    ([{"role": "user", "content": "a", "name": 3}], "messages[0].name must be a string"),
    ([{"role": "assistant", "content": "", "tool_calls": {}}], "messages[0].tool_calls must be an array"),
    ([{"role": "assistant", "tool_calls": ["x"]}], "messages[0].tool_calls[0] must be an object"),
    ([{"role": "assistant", "tool_calls": [{"type": "code", "function": {}}]}],
     'messages[0].tool_calls[0] must be {"type": "function", "function": {...}}'),
    ([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}],
     "messages[0].tool_calls[0].function.name must be a string"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}],
     "messages[0].tool_calls[0].function.arguments must be a JSON object"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}],
     "messages[0].tool_calls[0].function.arguments must be a JSON object"),
    ([{"role": "assistant", "tool_calls": [{"id": 1, "function": {"name": "f"}}]}],
     "messages[0].tool_calls[0].id must be a string"),
    ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id must be a string"),
])
def test_normalize_messages_rejects(given: object, message: str) -> None:
    with pytest.raises(LseError) as err:
        normalize_messages(given)
    assert (err.value.kind, err.value.param, err.value.message) == ("invalid_request", "messages", message)
