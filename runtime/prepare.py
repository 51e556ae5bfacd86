"""From a request body to sequences the scheduler can run.

Everything that can be refused is refused here, before any work starts:
field checks, thinking levels, the request's cost (runtime/bounds.py), the
chat template, the prompt's fit in the context, the token limit and the
queue bound. Only the template's own markers become special tokens
(runtime/chat/special.py).

Planning is a function of the model's frozen context (``ModelContext``,
built once by the engine) and the request; the one thing it asks the
running engine is whether the queue has room (``room``).
"""

from __future__ import annotations

from dataclasses import replace
from collections.abc import Callable
from typing import Any

from lse.runtime.bounds import check_prompt_chars, check_sequences
from lse.runtime.chat.generic_tools import GENERIC, generic_schema, make_parser, renders_tools, with_instruction
from lse.runtime.chat.special import encode_ids, strings_in
from lse.runtime.chat.template import TemplateError, TemplateRaised, normalize_messages
from lse.runtime.chat.template_text import opens_reasoning
from lse.runtime.context import ModelContext
from lse.runtime.chat.thinking import template_kwargs_for
from lse.runtime.detokenize import IncrementalDetokenizer
from lse.runtime.errors import invalid
from lse.runtime.limits import check_prompt_fits, resolve_token_limit
from lse.runtime.openai.request import CHAT, ParsedRequest, effective_sampling, parse_request
from lse.runtime.request_format import check_logit_bias_vocab
from lse.runtime.sampler import make_rng
from lse.runtime.schema_bounds import check_schema_bounds
from lse.runtime.sequence import Logprobs, Sequence
from lse.runtime.speculative import request_allows
from lse.runtime.stops import StopMatcher
from lse.runtime.structured import GrammarError, after_reasoning, json_grammar, tool_grammar, tool_parameters_grammar

# Template variables LSE sets itself, and the request field each comes from;
# chat_template_kwargs may not override them.
RESERVED_TEMPLATE_KWARGS = {"messages": "messages", "tools": "tools", "tool_choice": "tool_choice",
                            "add_generation_prompt": "always true: the reply is the assistant's turn"}


def prepare_request(model: ModelContext, body, endpoint: str, room: Callable[[int, int], None] | None = None,
                    reasoning_budget: int | None = None
                    ) -> tuple[list[Sequence], bool, list[str] | None, str | None]:
    """(sequences, include_usage, echo texts or None, the request's model name or None).
    ``room(sequences, queue_size)`` raises the 503 when the queue is full (None: no queue).
    ``reasoning_budget``: tokens a reply may think before its think block is
    closed for it (a wire layer's field, such as Anthropic's budget_tokens)."""
    parsed = parse_request(body, endpoint, operator_cap=model.max_tokens_cap, thinking=model.thinking)
    speculative = request_allows(body)  # lse_speculative (runtime/speculative.py)
    check_sequences(1 if endpoint == CHAT else len(parsed.prompts), parsed.n, model.queue_size)
    check_logit_bias_vocab(parsed.logit_bias, model.vocab_size)
    _check_stop_token_ids(parsed.ends.stop_token_ids, model.vocab_size)
    if endpoint == CHAT:
        generic = _generic_form(model, parsed)
        ids, opens = _chat_prompt(model, parsed, generic)
        prompts = [ids]
        # Tool calls are parsed only when the request offered tools (as vLLM
        # does) and did not forbid them: otherwise tool-call syntax stays content.
        tool_markers = model.tool_markers if parsed.tools and parsed.tool_choice != "none" else None
        tool_markers = GENERIC if generic else tool_markers
        parser_args = [(opens, model.thinking.think_markers, tool_markers, True)]
        param = "messages"
    else:
        prompts, parser_args = _completion_prompts(model, parsed)
        param = "prompt"
    for ids in prompts:
        check_prompt_fits(len(ids), model.context_length, param)
    if room is not None:
        room(len(prompts) * parsed.n, model.queue_size)
    grammars = [_grammar(model, parsed, bool(args and args[0])) for args in parser_args]
    seqs = [_sequence(model, parsed, ids, i * parsed.n + j, parser_args[i], grammars[i])
            for i, ids in enumerate(prompts) for j in range(parsed.n)]
    if reasoning_budget is not None:
        _budget(model, seqs, reasoning_budget)
    for s in seqs:
        s.speculative = speculative
    echo = None
    if endpoint != CHAT and parsed.echo:
        echo = [model.tokenizer.decode(ids, skip_special_tokens=False) if isinstance(p, list) else p
                for p, ids in zip(parsed.prompts, prompts) for _ in range(parsed.n)]
    return seqs, parsed.include_usage, echo, parsed.model


def _budget(model: ModelContext, seqs: list[Sequence], budget: int) -> None:
    """Give each sequence that splits reasoning the budget and the closing
    marker's ids; without think markers there is no block to close."""
    markers = model.thinking.think_markers
    if markers is None:
        return
    close = tuple(model.tokenizer.encode(markers[1], add_special_tokens=False).ids)
    for seq in seqs:
        if seq.parser is not None:
            seq.reasoning_budget, seq.close_reasoning = budget, close


def chat_prompt_ids(model: ModelContext, parsed: ParsedRequest) -> list[int]:
    """A chat request's rendered prompt as token ids, as it would run (for
    counting tokens without running it)."""
    return _chat_prompt(model, parsed, _generic_form(model, parsed))[0]


def _chat_prompt(model: ModelContext, parsed: ParsedRequest, generic: bool) -> tuple[list[int], bool]:
    """The rendered prompt's ids, and whether the reply opens inside a think block.
    ``generic``: the forced call takes the generic form (runtime/chat/generic_tools.py)."""
    level = parsed.thinking
    messages = normalize_messages(parsed.messages)
    if model.template is None:
        raise invalid("messages", "this model has no chat template; send raw text to /v1/completions")
    if generic:
        tools, several = _forced_tools(parsed)
        messages = with_instruction(messages, [t for _, t in tools], several,
                                    describe=not renders_tools(model.template.text))
    # The thinking spellings inside chat_template_kwargs were resolved into
    # `level` already; only the level's own variables reach the template.
    extra = {k: v for k, v in (parsed.chat_template_kwargs or {}).items()
             if k not in ("enable_thinking", "reasoning_effort")}
    for key in RESERVED_TEMPLATE_KWARGS:
        if key in extra:
            raise invalid(f"chat_template_kwargs.{key}", f"chat_template_kwargs.{key} is set by LSE from the "
                          f"request ({RESERVED_TEMPLATE_KWARGS[key]}); leave it out of chat_template_kwargs")
    # Everything the client wrote is defused, so only the template's markers are special tokens.
    user = {"messages": messages, "tools": parsed.tools, "tool_choice": parsed.tool_choice, "kwargs": extra}
    strings = list(strings_in(user))
    check_prompt_chars(sum(map(len, strings)), model.context_length, model.prompts.chars_per_token, "messages")
    mark = model.prompts.choose_mark(strings, model.template.text)
    user = model.prompts.defuse(user, mark)
    kwargs = {**user["kwargs"], **template_kwargs_for(level)}
    try:
        text = model.template.render(user["messages"], add_generation_prompt=True, tools=user["tools"],
                                      tool_choice=user["tool_choice"], **kwargs)
    except TemplateRaised as e:
        raise invalid("messages", f"the model's chat template refused these messages: {e}") from e
    except TemplateError as e:
        raise invalid("messages", f"the model's chat template could not render these messages: {e}") from e
    opens = level.opens_reasoning if level is not None else model.thinking.opens_reasoning
    return model.prompts.encode_rendered(text, mark), opens


def _completion_prompts(model: ModelContext, parsed: ParsedRequest) -> tuple[list[list[int]], list[tuple | None]]:
    """The prompts' ids, and each one's output-parser arguments (None: plain text)."""
    thinking = parsed.thinking
    prompts = []
    vocab = model.vocab_size
    # Each prompt's bounds are checked before the next is tokenized: characters
    # first, then its fit, so a batch of huge prompts is refused at the first.
    for p in parsed.prompts:
        if isinstance(p, str):
            check_prompt_chars(len(p), model.context_length, model.prompts.chars_per_token, "prompt")
            tokenizer = model.tokenizer if parsed.parse_special else model.prompts.text_only
            prompts.append(encode_ids(tokenizer, p))
        else:
            bad = [t for t in p if not 0 <= t < vocab]
            if bad:
                raise invalid("prompt", f"token id {bad[0]} is outside the vocabulary (0..{vocab - 1})")
            prompts.append(list(p))
        check_prompt_fits(len(prompts[-1]), model.context_length, "prompt")
    if not all(prompts):
        raise invalid("prompt", "the prompt is empty after tokenization")
    markers = model.thinking.think_markers
    if not (thinking.split_reasoning and markers):
        return prompts, [None] * len(prompts)
    # A raw prompt that ends inside an open think block starts the reply in reasoning.
    texts = [p if isinstance(p, str) else model.tokenizer.decode(p, skip_special_tokens=False)
             for p in parsed.prompts]
    return prompts, [(opens_reasoning(t, markers), markers, None, True) for t in texts]


def _grammar(model: ModelContext, parsed: ParsedRequest, opens: bool) -> str | None:
    """The Lark grammar the reply must match (None: free text), compiled and
    cached now so a refused schema is a 400 before any work starts. A forced
    tool call wins over response_format; a reply that opens inside a think
    block reasons freely up to the closing marker first."""
    choice = parsed.tool_choice
    grammar = param = None
    if parsed.response_format is not None:
        grammar, param = json_grammar(parsed.response_format.schema), "response_format"
        _check_grammar(model, grammar, param, "")
    if parsed.tools and (choice == "required" or isinstance(choice, dict)):
        grammar, param = _tool_call_grammar(model, parsed), "tool_choice"
    if grammar is None:
        return None
    markers = model.thinking.think_markers
    if opens and markers:
        grammar = after_reasoning(grammar, markers[1], model.grammars.literal)
    _check_grammar(model, grammar, param, "")
    return grammar


def _generic_form(model: ModelContext, parsed: ParsedRequest) -> bool:
    """A forced call on a template without tool-call markers takes the generic form."""
    choice = parsed.tool_choice
    return bool(parsed.tools) and (choice == "required" or isinstance(choice, dict)) and model.tool_markers is None


def _forced_tools(parsed: ParsedRequest) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """The tools a forced call may call (with their indices), and whether several calls may come."""
    choice = parsed.tool_choice
    wanted = None if choice == "required" else choice["function"]["name"]
    tools = [(i, t) for i, t in enumerate(parsed.tools or []) if wanted is None or t["function"]["name"] == wanted]
    return tools, choice == "required" and parsed.parallel_tool_calls


def _tool_call_grammar(model: ModelContext, parsed: ParsedRequest) -> str:
    tools, several = _forced_tools(parsed)
    for i, tool in tools:
        _check_grammar(model, tool_parameters_grammar(tool), f"tools[{i}].function.parameters",
                       f"tools[{i}].function.parameters: ", tool["function"].get("parameters"))
    chosen = [t for _, t in tools]
    if model.tool_markers is None:
        return json_grammar(generic_schema(chosen, several))
    return tool_grammar(chosen, model.grammars.literal, model.tool_markers, several)


def _check_grammar(model: ModelContext, grammar: str, param: str, where: str, schema: Any = None) -> None:
    try:
        check_schema_bounds(schema)
        model.grammars.check(grammar)
    except GrammarError as e:
        raise invalid(param, f"{where or param + ': '}the schema cannot be enforced by LSE's constrained "
                      f"decoding (llguidance): {e}") from e


def _banned_tool_marker(model: ModelContext, parsed: ParsedRequest) -> dict[int, float]:
    """tool_choice "none": the open marker, when it is one token, is banned."""
    if parsed.tool_choice != "none" or model.tool_markers is None:
        return {}
    ids = model.tokenizer.encode(model.tool_markers[0], add_special_tokens=False).ids
    return {ids[0]: -100.0} if len(ids) == 1 else {}


def _text_of(model: ModelContext) -> Callable[[list[int]], str]:
    """How a reply's ids become its text: the special tokens left out, but for
    the template's think and tool-call markers, which the output parser reads
    (and which stay in content wherever the parser is not asked to split)."""
    keep = tuple(m for pair in (model.thinking.think_markers, model.tool_markers) if pair for m in pair)
    hidden = model.prompts.hidden_in_output(keep)
    tok = model.tokenizer
    if not hidden:
        return lambda xs: tok.decode(xs, skip_special_tokens=False)
    return lambda xs: tok.decode([x for x in xs if x not in hidden], skip_special_tokens=False)


def _sequence(model: ModelContext, parsed: ParsedRequest, ids: list[int], index: int, parser_args,
              grammar: str | None) -> Sequence:
    limit = resolve_token_limit(request_max_tokens=parsed.max_tokens or None, operator_cap=model.max_tokens_cap,
                                max_new_tokens=model.defaults.max_new_tokens, max_length=model.defaults.max_length,
                                prompt_tokens=len(ids), context_length=model.context_length)
    logprobs = Logprobs(parsed.top_logprobs) if parsed.logprobs else None
    params = effective_sampling(parsed, model.defaults)
    banned = _banned_tool_marker(model, parsed)
    if banned:
        params = replace(params, logit_bias=tuple(sorted({**dict(params.logit_bias), **banned}.items())))
    return Sequence(
        index=index, prompt_ids=ids, limit=limit, params=params,
        rng=make_rng(parsed.seed, index), eos_ids=model.eos_ids,
        detok=IncrementalDetokenizer(_text_of(model)),
        stops=StopMatcher(parsed.stop), parser=make_parser(*parser_args) if parser_args else None,
        token_text=model.token_text, logprobs=logprobs,
        score_prompt=bool(parsed.echo and parsed.logprobs), generate=not parsed.scoring,
        constraint=model.grammars.constraint(grammar) if grammar is not None else None,
        end_ids=_end_ids(model, parsed), min_tokens=parsed.ends.min_tokens)


def _check_stop_token_ids(ids: tuple[int, ...], vocab: int) -> None:
    bad = [i for i in ids if i >= vocab]
    if bad:
        raise invalid("stop_token_ids", f"stop_token_ids holds {bad[0]}, outside the vocabulary (0..{vocab - 1})")


def _end_ids(model: ModelContext, parsed: ParsedRequest) -> frozenset[int] | None:
    """The ids that end a reply: the model's end-of-turn ids (none under
    ignore_eos) and the request's stop_token_ids; None: the model's own."""
    ends = parsed.ends
    if not ends.ignore_eos and not ends.stop_token_ids:
        return None
    return frozenset(ends.stop_token_ids) | (frozenset() if ends.ignore_eos else model.eos_ids)
