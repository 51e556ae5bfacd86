"""safetensors_writer.ChunkedWriter, which every safetensors file LSE writes goes
through (the kernels' layout above all): what it is given arrives whole and
in order, and every write but the last starts at a multiple of the chunk and
is whole chunks long, whatever the sizes of the pieces handed to it and
however short the file's own writes fall."""

from __future__ import annotations

import numpy as np
import pytest

from lse.compiler.safetensors_writer import ChunkedWriter, write_aligned_safetensors


class Recorder:
    """A raw file that takes at most ``limit`` bytes a write, recording each one's offset and length."""

    def __init__(self, limit: int | None = None):
        self.data, self.writes, self.limit = bytearray(), [], limit

    def write(self, view) -> int:
        n = len(view) if self.limit is None else min(len(view), self.limit)
        self.writes.append((len(self.data), n))
        self.data += bytes(view[:n])
        return n


@pytest.mark.parametrize("limit", [None, 48])
@pytest.mark.parametrize("seed", range(4))
def test_pieces_arrive_whole_in_chunk_aligned_writes(seed, limit):
    """limit: the raw file takes at most 48 bytes a write, so each of the
    writer's writes is finished in several."""
    rng = np.random.default_rng(seed)
    chunk = 64
    pieces = [rng.integers(0, 256, int(n), dtype=np.uint8) for n in rng.choice([0, 1, 7, 63, 64, 65, 200, 511], 40)]
    raw = Recorder(limit)
    w = ChunkedWriter(raw, chunk)
    for i, p in enumerate(pieces):
        w.write(p if i % 2 else p.tobytes())  # arrays and bytes alike
        assert w.tell() == sum(len(q) for q in pieces[:i + 1])
    w.flush()
    assert bytes(raw.data) == b"".join(p.tobytes() for p in pieces)
    if limit is None:  # each write of the writer's whole chunks at a chunk boundary, but the last
        *body, (last, _) = raw.writes
        assert all(o % chunk == 0 and n % chunk == 0 and n for o, n in body) and last % chunk == 0
        assert len(body) >= 2


def test_a_safetensors_file_is_the_same_bytes_through_it(tmp_path):
    """A file of odd-sized tensors, some in runs, reads back as written."""
    from safetensors.numpy import load_file

    rng = np.random.default_rng(7)
    arrays = {"a": rng.standard_normal((5, 3)).astype(np.float32), "b": rng.integers(-128, 127, (37, 9), np.int8),
              "c": rng.standard_normal((300, 7)).astype(np.float16)}

    def load(name: str):
        a = arrays[name]
        return iter([a[:16], a[16:]]) if name == "b" else a

    path = tmp_path / "t.safetensors"
    write_aligned_safetensors(path, {n: (a.shape, a.dtype) for n, a in arrays.items()}, load)
    back = load_file(str(path))
    for n, a in arrays.items():
        assert np.array_equal(back[n], a)
