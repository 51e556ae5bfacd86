"""The verify entry point (``verify_<i>``): a speculative step's rows in one call.

Speculative decoding (runtime/speculative.py) checks a slot's last token and
K proposals at consecutive positions. ``verify`` is prefill's function shape
(one slot, the ``slot`` scalar, a dynamic row count: the prompt path's GEMM,
which hands up to 16 rows to the matvecs, and the causal rows-attention
kernel, which writes the rows' K/V and attends each row up to its own
position) with the logits of every row as its one output: one call, where
prefill then ``lm_head_all`` made two, read the lm_head matrix twice (the
prompt's last row, then every row) and handed the hidden rows back through
the host. emit_mlir treats the mode as single-slot (SINGLE_SLOT) with every
row's logits (value_dims, emit_ops.lm_head).

Compiled only into an artifact asked for with them (CompileOptions.speculative:
an engine started with --speculative, lse-compile --speculative ngram), since
an engine that does not speculate never calls them; then where the whole
model is one device step and the decode-shaped
``verify4`` (below) is not: a plan with host groups keeps today's path
(prefill, then lm_head_all), and so does an artifact with ``verify4`` for
the steps it cannot take (more than 4 rows, or 4 past the context's end;
runtime/speculative.py proposes at most 3), since ``verify`` is a
prefill-shaped copy of the model in the decode module: 1.4 s of a 1B
Q4_K_M file's 3.9 s decode-module compile (docs/performance.md)."""

from __future__ import annotations

VERIFY = "verify"


def verify_modes(steps) -> tuple[str, ...]:
    """("verify",) where every step of the plan is on the device, else ()."""
    return (VERIFY,) if all(s.kind == "device" for s in steps) else ()


# verify<R>: R static rows of one slot at consecutive positions (the rows
# padded to R by the runtime), decode's shape: the several-row matvec kernels
# (the weights read once for every row) and decode's attention kernel, whose
# workgroups write the step's K and V rows within their own positions, so
# each row attends causally to the rows before it (lse_attn.c). Compiled
# where that kernel serves (pipeline._slot_kernel). 4 rows only: verify4's
# logits equal decode's bit for bit (its attention split as a lone row's,
# emit_kernels.attend; the matvecs' 4-row path sums each row as one row's),
# so greedy ties break alike; an 8-row entry's matvecs sum in another order.
ROWS = (4,)
ROW_MODES = tuple(f"{VERIFY}{r}" for r in ROWS)  # verify4: static rows, a slot_ids input like decode1's


def entry_modes(slot_kernel: bool, steps) -> tuple[str, ...]:
    """The verify entries an artifact carries: verify4 where it compiles, else verify (or none)."""
    return row_modes(slot_kernel, steps) or verify_modes(steps)


def row_modes(slot_kernel: bool, steps) -> tuple[str, ...]:
    """("verify4",) where the slot kernel serves and every step is on the device."""
    return ROW_MODES if slot_kernel and verify_modes(steps) else ()

