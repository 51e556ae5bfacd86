"""Scenarios of sampling: greedy, the off values, truncation to the top token,
the frequency/repetition mapping, penalties applied, and the model's defaults
applied to fields a request leaves out."""

from __future__ import annotations

from typing import Any

from lse.spec.checks import choices_of
from lse.spec.checks_behaviour import penalty_changes_repeat, same_reply
from lse.spec.checks_limits import all_choices_greedy
from lse.spec.checks_stream import reply_outputs
from lse.spec.context import DROP, Context, Unobservable, scenario
from lse.spec.rows import COMPLETIONS

SAMPLING_FIELDS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty")
# Every filter off, so each case below differs from it in one field only.
PLAIN = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
         "presence_penalty": 0.0}
# Prompts that tend to make a model repeat itself.
LOOPY = ("a a a a a a a a", "the the the the", "1 2 1 2 1 2 1 2", "la la la la la la")


def _plain(ctx: Context, **fields: Any) -> dict[str, Any]:
    return ctx.base(COMPLETIONS, **({"max_tokens": 6, "seed": 11} | PLAIN | fields))


@scenario()
def sampling_equivalences(ctx: Context) -> None:
    """Greedy ignores the seed; top_k 0 == -1; top_k 1, top_p 0 and min_p 1 are greedy;
    frequency_penalty f == repetition_penalty 1 + f unless repetition_penalty is sent."""
    def run(**fields: Any) -> dict[str, Any]:
        return ctx.complete(COMPLETIONS, _plain(ctx, **fields))

    greedy = run(temperature=0)
    ctx.verify(same_reply, run(temperature=-1, seed=12), greedy, "temperature 0 with another seed",
               rows=("sampling.greedy", "req.temperature"))
    ctx.verify(same_reply, run(top_k=-1), run(top_k=0), "top_k 0", rows=("sampling.off_values", "req.top_k"))
    for field, value in (("top_k", 1), ("top_p", 0.0), ("min_p", 1.0)):
        ctx.verify(same_reply, run(**{field: value}), greedy, "greedy decoding",
                   rows=("sampling.truncation", f"req.{field}"))
        # Eight sampled choices, not one: a filter that keeps a near tie besides the top token shows.
        ctx.verify(all_choices_greedy, run(**{field: value}, n=8), greedy, f"{field} {value}",
                   rows=("sampling.truncation", f"req.{field}"))
    ctx.verify(same_reply, run(frequency_penalty=1.0, repetition_penalty=DROP), run(repetition_penalty=2.0),
               "repetition_penalty 2.0",
               rows=("sampling.frequency", "req.frequency_penalty", "override.completions_penalties"))
    ctx.verify(same_reply, run(frequency_penalty=1.0, repetition_penalty=1.0), run(), "repetition_penalty 1.0",
               rows=("sampling.frequency", "req.repetition_penalty"))


def _outputs(body: dict[str, Any]) -> list[tuple]:
    return [row[1:] for row in reply_outputs(body)]


def _repeats(body: dict[str, Any]) -> bool:
    tokens = (choices_of(body)[0].get("logprobs") or {}).get("tokens") or []
    return len(set(tokens)) < len(tokens)


@scenario()
def penalties_applied(ctx: Context) -> None:
    """A greedy reply that repeats a token changes under a repetition or presence penalty.

    Each penalty is tried on the repeating prompts in turn until one reply
    changes: a confident model (Gemma 3 270M on "a a a ...") keeps its greedy
    token under presence_penalty 2.0, OpenAI's largest, where the next
    prompt's does change; a penalty never applied changes none of them."""
    repeating = []
    for prompt in LOOPY:
        greedy = dict(temperature=0, max_tokens=8, logprobs=0, prompt=prompt)
        plain = ctx.complete(COMPLETIONS, _plain(ctx, **greedy))
        if _repeats(plain):
            repeating.append((greedy, plain))
        if len(repeating) == ctx.profile.tries:
            break
    if not repeating:
        raise Unobservable("no greedy reply repeated a token, so a penalty had nothing to change")
    for field, value in (("repetition_penalty", 100.0), ("presence_penalty", 2.0)):
        for i, (greedy, plain) in enumerate(repeating):
            penalised = ctx.complete(COMPLETIONS, _plain(ctx, **greedy, **{field: value}))
            if _outputs(penalised) != _outputs(plain) or i == len(repeating) - 1:
                ctx.verify(penalty_changes_repeat, plain, penalised, f"{field} {value}")
                break


def _applied_rows(ctx: Context) -> tuple[str, ...]:
    rows = ["defaults.order", "override.defaults"]
    if "files_defaults" in ctx.facts.caps:
        rows.append("defaults.from_files")
    if "server_temperature" in ctx.facts.caps:
        rows.append("defaults.server_option")
    return tuple(rows)


@scenario()
def defaults_applied(ctx: Context) -> None:
    """Fields left out, sent as null, or sent as the reported defaults give the same reply."""
    defaults = ctx.facts.defaults
    for seed in (21, 22):
        left_out = ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, max_tokens=6, seed=seed))
        nulls = {f: None for f in SAMPLING_FIELDS}
        ctx.verify(same_reply, ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, max_tokens=6, seed=seed, **nulls)),
                   left_out, "the fields left out", rows=_applied_rows(ctx))
        explicit = {f: defaults[f] for f in SAMPLING_FIELDS if defaults.get(f) is not None}
        ctx.verify(same_reply, ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, max_tokens=6, seed=seed, **explicit)),
                   left_out, f"the reported defaults {explicit}", rows=_applied_rows(ctx))


@scenario("greedy_default")
def greedy_by_default(ctx: Context) -> None:
    """A default temperature of 0 is greedy: two seeds, one reply."""
    first = ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, max_tokens=6, seed=1))
    ctx.verify(same_reply, ctx.complete(COMPLETIONS, ctx.base(COMPLETIONS, max_tokens=6, seed=2)), first,
               "the reply with seed 1", rows=("defaults.greedy", "sampling.greedy"))
