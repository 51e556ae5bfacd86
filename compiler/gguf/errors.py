"""The tokenizer import's refusal, shared by tokenizer.py (byte-level BPE) and
spm.py (SentencePiece), which tokenizer.py calls."""


class TokenizerImportError(ValueError):
    """The GGUF's tokenizer is of a kind this importer does not build."""
