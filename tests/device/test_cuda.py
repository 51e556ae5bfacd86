"""The cuda target on a real GPU (opt-in: LSE_DEVICE_TESTS=1 on a machine
with an NVIDIA driver). The module is compiled for sm_80 (IREE 3.13 does not
know sm_90); Hopper JIT-compiles its PTX."""

from __future__ import annotations

import numpy as np

from lse.runtime.api import lse_close, lse_open, lse_request, lse_status
from lse.runtime.reference import ReferenceModel
from lse.tools.make_fixtures import fixture_dir

PROMPT = [5, 17, 200, 3, 99, 42, 7]


def test_cuda_backend_matches_the_reference_and_serves():
    engine = lse_open({"model": str(fixture_dir("llama")), "kv_len": 128, "pool": ["cuda:0"]})
    try:
        assert lse_status(engine)["engine"]["device"] == "cuda:0"
        logits, _ = engine.backend.prefill(np.asarray(PROMPT, np.int64), 0, 0, lambda cause: None)
        ref = ReferenceModel.from_dir(fixture_dir("llama")).forward(PROMPT)[-1]
        np.testing.assert_allclose(logits, ref, atol=1e-3)
        status, body = lse_request(engine, {"messages": [{"role": "user", "content": "hi"}],
                                            "temperature": 0, "max_tokens": 8}).result()
        assert status == 200 and body["usage"]["completion_tokens"] >= 1
    finally:
        lse_close(engine)
