"""The compiler's GGUF frontend: a GGUF file read and imported into a Hugging Face model directory
(``importer``: lse-import; ``reader``: the file and its block formats; ``archs``: per-architecture
names; ``tokenizer`` and ``spm``: tokenizer.json from the file's metadata)."""
