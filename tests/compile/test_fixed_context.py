"""A context fixed at compile time (CompileOptions.kv_len, lse-compile
--kv-len, and what the engine compiles through the cache): the KV cache's
position axis is static, decode1 takes its slot as a (1,) slot_ids input where
the kernels serve, and so no dispatch of decode1_0 takes a per-call value:
IREE records its command buffer once (memoized at module init) instead of at
every step. Checked on the GGUF fixture whose matrices use every block
format (the hand-written kernels serve it): the module's bytecode, the greedy
tokens against the numpy reference, and what the engine serves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import iree.runtime as rt
import numpy as np
import pytest
from test_compiled_vs_reference import greedy_reference

from lse.compiler import cpu_kernel_build as cpu_kernels
from lse.compiler.cache import compiled_artifact
from lse.compiler.pipeline import CompileOptions
from lse.runtime.api import lse_close, lse_model_info, lse_open
from lse.runtime.backend import DeviceBackend
from lse.runtime.engine import LseStartupError
from lse.runtime.reference import ReferenceModel
from lse.compiler.gguf.importer import ensure_imported
from lse.fixtures.make_gguf_fixtures import gguf_fixture_path

pytestmark = pytest.mark.skipif(cpu_kernels.kernels_available() is not None,
                                reason=f"kernels not built here: {cpu_kernels.kernels_available()}")
PROMPT = [504, 3575, 282, 4649, 314, 17, 9, 4000, 250]
KV_LEN = 96


@pytest.fixture(scope="module")
def model_dir():
    return ensure_imported(gguf_fixture_path())


def _compiled(model_dir, kv_len):
    return compiled_artifact(model_dir, CompileOptions(slots=2, kv_dtype="f16", kv_len=kv_len), report=lambda m: None)


def _function_body(artifact: Path, module: str, name: str) -> str:
    """decode's function ``name`` as iree-dump-module prints its bytecode."""
    dump = Path(sys.executable).parent / "iree-dump-module"
    text = subprocess.run([str(dump), str(artifact / module)], check=True, capture_output=True, text=True).stdout
    match = re.search(rf"^vm\.func @{name}\(.*?^}}", text, re.S | re.M)
    assert match, f"{name} not in {module}"
    return match.group(0)


def test_a_fixed_context_records_decode_once(model_dir):
    fixed, manifest = _compiled(model_dir, KV_LEN)
    assert manifest.kv_len == KV_LEN
    entry = next(e for e in manifest.targets["llvm-cpu"].entry_points if e.name == "decode1_0")
    assert "slot_ids" in entry.inputs and entry.scalars == ()
    body = _function_body(fixed, entry.module, "decode1_0")
    assert "hal.command_buffer.dispatch" not in body and "queue.execute.indirect" in body
    # with the context left dynamic, decode1_0 records its dispatches at every call
    dynamic, manifest = _compiled(model_dir, None)
    assert manifest.kv_len is None
    assert "hal.command_buffer.dispatch" in _function_body(dynamic, entry.module, "decode1_0")


def test_a_fixed_context_decodes_one_slot_as_the_reference(model_dir, no_fallback):
    artifact, manifest = _compiled(model_dir, KV_LEN)
    backend = DeviceBackend(manifest, artifact, manifest.targets["llvm-cpu"], rt.get_device("local-task"),
                            "local:0", KV_LEN)
    want, want_logits = greedy_reference(ReferenceModel.from_dir(model_dir), PROMPT, 16)
    logits, _ = backend.prefill(np.asarray(PROMPT, np.int64), 0, 1, no_fallback)  # slot 1, through decode1
    got, got_logits = [int(np.argmax(logits))], [logits]
    for i in range(15):
        lg = backend.decode_one(got[-1], len(PROMPT) + i, 1, no_fallback)
        got_logits.append(lg)
        got.append(int(np.argmax(lg)))
    assert got == want
    assert float(np.abs(np.asarray(got_logits) - np.asarray(want_logits)).max()) < 1e-2  # an f16 cache


def test_the_engine_serves_an_artifacts_fixed_context(model_dir, tmp_path):
    from lse.compiler.cli import main as lse_compile

    out = tmp_path / "fixed"
    assert lse_compile([str(model_dir), "-o", str(out), "--slots", "2", "--kv-len", str(KV_LEN)]) == 0
    engine = lse_open({"model": str(out)})
    try:
        assert lse_model_info(engine)["context_length"] == KV_LEN
    finally:
        lse_close(engine)
    with pytest.raises(LseStartupError, match=f"compiled for a context of {KV_LEN} tokens"):
        lse_open({"model": str(out), "kv_len": 2 * KV_LEN})
