"""The compiler's passes on a tiny graph: fusion, the capability partition,
segment signatures, diagnostics read back onto nodes, and the emitted MLIR
of a one-layer decode step against a checked-in copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from lse.compiler import kernel_layout
from lse.compiler.config import ModelConfigError, parse_config
from lse.compiler.emit_mlir import FunctionEmitter
from lse.compiler.emit_module import emit_module
from lse.compiler.node_groups import group_nodes
from lse.compiler.graph import build_graph, verify_graph
from lse.compiler.iree_compile import IreeCompileError
from lse.compiler.partition_by_capability import PartitionError, partition, signatures
from lse.compiler.weights import WeightError, check_weights, expected_shapes

TINY = dict(model_type="llama", vocab_size=259, hidden_size=48, intermediate_size=23, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0,
            max_position_embeddings=64)
GOLDEN = Path(__file__).parent / "data" / "tiny_decode.mlir"


@pytest.fixture
def graph():
    g = build_graph(parse_config(TINY))
    verify_graph(g)
    return g


def test_groups_are_anchors_with_their_elementwise_tail(graph):
    described = [g.describe() for g in group_nodes(graph)]
    assert described[:3] == ["fused group 0 (1 node: embedding)", "fused group 1 (1 node: rms_norm)",
                             "fused group 2 (1 node: matmul)"]
    assert "fused group 11 (3 nodes: matmul, silu, mul)" in described
    assert "fused group 8 (2 nodes: matmul, add)" in described


def test_partition_plans_host_groups_between_device_segments(graph):
    steps = partition(group_nodes(graph), "llvm-cpu", frozenset({"silu"}))
    assert [(s.kind, s.segment, s.group) for s in steps] == [("device", 0, None), ("host", None, 11),
                                                             ("device", 1, None)]
    assert steps[1].cause == "fused group 11 (3 nodes: matmul, silu, mul); llvm-cpu: no kernel for silu"
    prefill = signatures(graph, steps, "prefill")
    assert [(s.name, s.inputs, s.scalars, s.uses_cache, s.outputs) for s in prefill] == [
        ("prefill_0", ("tokens", "positions"), ("slot",), True, ("l0.resid1", "l0.mlp_in", "l0.gate")),
        ("prefill_1", ("l0.prod", "l0.resid1"), (), False, ("hidden", "logits")),
    ]


def test_failing_nodes_from_diagnostics_become_host_groups(graph):
    diagnostics = ("graph.node13:13:0: error: 'spirv.GL.Exp' op operand #0 must be 16/32-bit float\n"
                   "graph.node13:13:0: error: failed to run translation of source executable to target "
                   "executable for backend #hal.executable.target<...>\n")
    failing = IreeCompileError(["iree-compile"], diagnostics).failing_nodes
    assert failing == frozenset({13}) and graph.nodes[13].op == "silu"
    steps = partition(group_nodes(graph), "vulkan-spirv", frozenset(), failing)
    assert [s.cause for s in steps if s.kind == "host"] == [
        "fused group 11 (3 nodes: matmul, silu, mul); vulkan-spirv: iree-compile failed for silu"]


def test_attention_cannot_be_a_host_group(graph):
    with pytest.raises(PartitionError, match="attention reads the KV cache"):
        partition(group_nodes(graph), "cuda", frozenset({"attention"}))


def test_weight_map_lists_every_missing_and_extra_tensor(graph):
    cfg = graph.config
    shapes = expected_shapes(cfg, graph)
    assert shapes["model.layers.0.mlp.down_proj.weight"] == (48, 23)

    class T:
        def __init__(self, shape):
            self.shape, self.dtype = shape, "F32"

    tensors = {n: T(s) for n, s in shapes.items() if n != "lm_head.weight"}
    tensors["model.extra.weight"] = T((1,))
    with pytest.raises(WeightError) as e:
        check_weights(cfg, graph, tensors)
    assert str(e.value) == ("the checkpoint does not match the model graph: missing tensors: lm_head.weight; "
                            "unexpected tensors: model.extra.weight")


@pytest.mark.parametrize("raw, message", [
    ({**TINY, "model_type": "gpt2"}, "config.json model_type 'gpt2' is not supported; supported: llama, qwen2, qwen3, phi3, gemma3_text"),
    ({k: v for k, v in TINY.items() if k not in ("hidden_size", "vocab_size")},
     "config.json (llama) lacks required key(s): vocab_size, hidden_size"),
    ({**TINY, "model_type": "qwen3"}, "config.json (qwen3) lacks required key(s): head_dim"),
])
def test_config_errors_name_what_is_wrong(raw, message):
    with pytest.raises(ModelConfigError) as e:
        parse_config(raw)
    assert str(e.value) == message


def test_decode_mlir_matches_the_checked_in_copy(graph):
    """On an intended emitter change, write the new text to
    tests/unit/data/tiny_decode.mlir and review its diff like code."""
    weights = {n: (s, "F32") for n, s in expected_shapes(graph.config, graph).items()}
    steps = partition(group_nodes(graph), "llvm-cpu", frozenset())
    [sig] = signatures(graph, steps, "decode")
    text = emit_module(graph, weights, [(sig, list(graph.nodes))], slots=2)
    assert text == GOLDEN.read_text()


def test_a_fixed_context_leaves_decode1_no_per_call_value(graph):
    """With the kernels (slot_tensor) decode1 takes its slot as a (1,)
    slot_ids input, not a scalar, and with kv_len the cache type is static:
    the emitted function then has no dynamic dimension and no i64 argument,
    which is what lets IREE memoize its command buffer."""
    steps = partition(group_nodes(graph), "llvm-cpu", frozenset())
    [sig] = signatures(graph, steps, "decode1", slot_tensor=True)
    assert "slot_ids" in sig.inputs and sig.scalars == ()
    [plain] = signatures(graph, steps, "decode1")
    assert "slot_ids" not in plain.inputs and plain.scalars == ("slot",)
    weights = {n: (s, "F32") for n, s in expected_shapes(graph.config, graph).items()}
    header = emit_module(graph, weights, [(sig, list(graph.nodes))], slots=2, kv_len=40).splitlines()
    func = next(line for line in header if "func.func @decode1_0" in line)
    assert "x40x" in func and "?" not in func and ": i64" not in func
    dynamic = emit_module(graph, weights, [(plain, list(graph.nodes))], slots=2).splitlines()
    assert "x?x" in next(line for line in dynamic if "func.func @decode1_0" in line)


def test_fresh_ssa_names_never_meet(graph):
    """A hint ending in a digit ("per1" at 143) and a shorter one ("per" at
    1143) once both made %per1143: iree-compile refused the default model."""
    em = FunctionEmitter(graph, {}, "decode", 1)
    hints = ("per", "per1", "c", "c3", "nb", "nb1")
    names = set()
    for hint in hints:
        for count in range(2000):
            em.counter = count
            names.add(em.fresh(hint))
    assert len(names) == len(hints) * 2000


def _q4_1_weights(graph) -> dict:
    """Every matrix in q4_1 blocks (lse-import's parts, and the kernels'
    interleaved copy lse-compile adds), the rest f32."""
    weights = {}
    for name, shape in expected_shapes(graph.config, graph).items():
        if len(shape) == 2 and not name.endswith("embed_tokens.weight"):
            m, k = shape
            weights |= {name: (shape, "q4_1"), f"{name}.q": ((m, k // 32, 32), "U4"),
                        f"{name}.d": ((m, k // 32), "F16"), f"{name}.m": ((m, k // 32), "F16")}
            weights |= kernel_layout.layout_weights(weights, [name])
        else:
            weights[name] = (shape, "F32")
    return weights


@pytest.mark.parametrize("mode", ["decode", "prefill"])
def test_decode_runs_sibling_matvecs_as_one_dispatch(mode):
    """With the CPU kernels, decode's q, k and v (one input, one format) are
    one dispatch to lse_u4_matvec3, gate and up one to lse_u4_matvec2, o and
    down one each: 4 a layer, not 7, in layer order, then the lm_head. A
    prompt's rows keep one GEMM each, and its last row's lm_head the matvec."""
    cfg = parse_config(TINY | dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2))
    g = build_graph(cfg)
    steps = partition(group_nodes(g), "llvm-cpu", frozenset())
    [sig] = signatures(g, steps, mode)
    text = emit_module(g, _q4_1_weights(g), [(sig, list(g.nodes))], slots=2, kernels=True, kv_dtype="f16")
    calls = [line.split("@lse_kernels::@")[1].split("[")[0] for line in text.splitlines()
             if "flow.dispatch @lse_kernels::@u4_" in line]
    if mode == "decode":
        assert calls == ["u4_matvec3", "u4_matvec", "u4_matvec2", "u4_matvec"] * 2 + ["u4_matvec"]
    else:
        assert calls == ["u4_gemm"] * 14 + ["u4_matvec"]
