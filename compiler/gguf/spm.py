"""tokenizer.json for a GGUF's SentencePiece vocabulary (``tokenizer.ggml.model == "llama"``) of a Gemma file.

A Gemma GGUF stores the vocabulary, the scores and the token types, but no
merges. The tokenizer built here is the one transformers builds from the same
file (``integrations/gguf/gguf_tokenizer_mapping.py``, ``gemma_tokenizer``),
the tokenizer of the golden ids LSE is checked against:

- a BPE model with byte fallback (the ``<0x00>``..``<0xFF>`` tokens) and
  ``<unk>`` fused, the normalizer writing each space as "▁", no prefix space
  (Gemma's files say ``add_space_prefix = false``);
- tokens stored as runs of real spaces ("  ") respelled as runs of "▁", the
  spelling the normalized text has;
- merges recovered from the vocabulary: every split of a token into two
  tokens, ordered by the merged token's place in the file (Gemma's scores do
  not follow its merge order; the file's order does), then by the lengths of
  the two parts;
- the decoder turning "▁" back into spaces and byte tokens into bytes.

Other SentencePiece files (Llama 2, Mistral, Phi-3) differ in the prefix
space and the merge order and are refused by tokenizer.build_tokenizer.
"""

from __future__ import annotations

from typing import Any

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from lse.compiler.gguf.errors import TokenizerImportError

SPACE = "\u2581"
# The architectures whose SentencePiece files this module builds.
GEMMA_ARCHS = ("gemma3",)


def respelled(tokens: list[str]) -> list[str]:
    """Tokens of real spaces only, written as "▁" runs (the file keeps them as spaces)."""
    return [SPACE * len(t) if " " in t and not t.strip() else t for t in tokens]


def recovered_merges(tokens: list[str]) -> list[tuple[str, str]]:
    """Every (left, right) whose concatenation is a token and both parts are tokens,
    best first: the merged token's place in the file, then the parts' lengths
    (transformers' ``generate_merges`` with the file's order as the score)."""
    vocab = {t: i for i, t in enumerate(tokens)}
    found: list[tuple[int, int, int, int, int, str, str]] = []
    for merged, place in vocab.items():
        for cut in range(1, len(merged)):
            left, right = merged[:cut], merged[cut:]
            li, ri = vocab.get(left), vocab.get(right)
            if li is not None and ri is not None:
                found.append((place, -len(left), -len(right), li, ri, left, right))
    # generate_merges sorts by (score, len(left), len(right)) descending with the
    # score -place, after an ascending (vocab[left], vocab[right]) sort per token;
    # Python's sort is stable, so the tie order is the per-token one.
    found.sort(key=lambda m: (m[0], m[1], m[2]))
    return [(m[5], m[6]) for m in found]


def build_gemma(meta: dict[str, Any]) -> Tokenizer:
    """The BPE tokenizer of a Gemma GGUF's vocabulary (special tokens are added by the caller);
    the file's merges where it has them (as transformers), else the recovered ones."""
    if meta.get("tokenizer.ggml.add_space_prefix", False):
        raise TokenizerImportError("GGUF key tokenizer.ggml.add_space_prefix = True is not supported in a "
                                   f"{meta.get('general.architecture')} file; supported: False")
    tokens = respelled(list(meta["tokenizer.ggml.tokens"]))
    stored = [tuple(m.split(" ")) for m in meta.get("tokenizer.ggml.merges", [])]
    if any(len(m) != 2 for m in stored):
        raise TokenizerImportError("tokenizer.ggml.merges has an entry that is not two space-separated tokens")
    unk_id = meta.get("tokenizer.ggml.unknown_token_id")
    unk = tokens[unk_id] if unk_id is not None else "<unk>"
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=stored or recovered_merges(tokens),
                               fuse_unk=True, unk_token=unk, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", SPACE)
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok
