"""The compiler↔runtime contract (#43): the manifest names the logits node, and
ModelConfig.from_json reads back the model_config the compiler writes."""

import json
import pytest

from lse.compiler.config import ModelConfig, parse_config
from lse.compiler.graph import Graph, build_graph, logits_node
from lse.compiler.manifest import ABI_VERSION, Manifest, ManifestError, read_manifest
from lse.runtime.backend import _named_head

pytestmark = pytest.mark.unit

_BASE = {"vocab_size": 301, "hidden_size": 96, "intermediate_size": 256, "num_hidden_layers": 2,
         "num_attention_heads": 3, "rms_norm_eps": 1e-5, "max_position_embeddings": 2048}
_CONFIGS = {
    "llama": {**_BASE, "model_type": "llama", "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    "qwen3": {**_BASE, "model_type": "qwen3", "head_dim": 40, "num_key_value_heads": 1},
    "gemma3_text": {**_BASE, "model_type": "gemma3_text", "num_attention_heads": 2, "num_hidden_layers": 7},
}


@pytest.mark.parametrize("arch", sorted(_CONFIGS))
def test_model_config_from_json_reads_back_what_to_json_writes(arch):
    cfg = parse_config(_CONFIGS[arch])
    # through JSON, as the manifest carries it: tuples come back as lists
    back = ModelConfig.from_json(json.loads(json.dumps(cfg.to_json())))
    assert back == cfg
    assert back.head_dim == cfg.head_dim


def test_logits_node_is_the_node_that_writes_the_logits_wherever_it_stands():
    graph = build_graph(parse_config(_CONFIGS["llama"]))
    head = logits_node(graph)
    assert (head.op, head.output) == ("lm_head", "logits")
    # a graph whose lm_head is not its last node: nodes[-1] would name the wrong one
    moved = Graph(graph.config, (head, *graph.nodes[:head.id], *graph.nodes[head.id + 1:]), graph.outputs)
    assert logits_node(moved) is head
    assert moved.nodes[-1] is not head


def test_the_runtime_refuses_a_manifest_whose_logits_node_is_not_the_graphs():
    graph = build_graph(parse_config(_CONFIGS["llama"]))
    head = logits_node(graph)
    assert _named_head(graph, head.id) is head
    with pytest.raises(ManifestError) as e:
        _named_head(graph, head.id - 1)
    assert str(e.value) == (f"manifest logits_node {head.id - 1} is not the graph's logits node {head.id}; "
                            "recompile with lse-compile")


def _manifest(cfg: ModelConfig, logits: int) -> Manifest:
    return Manifest(abi_version=ABI_VERSION, model_dir="/m", model_config=cfg.to_json(), parameter_files=[],
                    slots=1, compiler_version="x", cache_key="k", cpu_features="", logits_node=logits)


def test_the_manifest_carries_the_logits_node_and_the_reader_accepts_what_the_compiler_writes(tmp_path):
    cfg = parse_config(_CONFIGS["qwen3"])
    written = _manifest(cfg, logits_node(build_graph(cfg)).id)
    written.write(tmp_path)
    read = read_manifest(tmp_path)
    assert read == written
    assert ModelConfig.from_json(read.model_config) == cfg


def test_a_manifest_without_the_logits_node_is_refused(tmp_path):
    cfg = parse_config(_CONFIGS["llama"])
    raw = _manifest(cfg, 0).to_json()
    del raw["logits_node"]
    (tmp_path / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError) as e:
        read_manifest(tmp_path)
    assert "malformed manifest" in str(e.value) and "logits_node" in str(e.value)
    # an abi_version 3 manifest (before logits_node) is refused by its version
    (tmp_path / "manifest.json").write_text(json.dumps({**raw, "abi_version": 3}))
    with pytest.raises(ManifestError) as e:
        read_manifest(tmp_path)
    assert str(e.value).endswith(f"manifest abi_version 3 but this LSE reads {ABI_VERSION}; recompile with lse-compile")
    assert ABI_VERSION == 5  # 5: kv_layout (compiler/kv_layout.py)


def test_the_partitioners_entry_points_are_the_manifests_and_read_back_equal(tmp_path):
    """One type from the emitter to the runtime: the partitioner's entry points,
    each given its module by the pipeline, go into the manifest as they are and
    come back equal (tuples through JSON's lists)."""
    from lse.compiler.manifest import EntryPoint, TargetArtifact
    from lse.compiler.node_groups import group_nodes
    from lse.compiler.partition_by_capability import partition, signatures
    from lse.compiler.pipeline import _modules
    from lse.compiler.targets import TARGETS

    cfg = parse_config(_CONFIGS["llama"])
    graph = build_graph(cfg)
    steps = partition(group_nodes(graph), "llvm-cpu", frozenset())
    entries = signatures(graph, steps, "prefill") + signatures(graph, steps, "decode")
    assert all(type(e) is EntryPoint and e.module == "" for e in entries)
    modules = _modules(TARGETS["llvm-cpu"], [], [(e, []) for e in entries])
    stamped = [e for m in modules for e, _ in m.functions]
    assert {e.name: e.module for e in stamped} == {"prefill_0": "llvm-cpu.vmfb", "decode_0": "llvm-cpu-decode.vmfb"}
    written = _manifest(cfg, logits_node(graph).id)
    written.targets["llvm-cpu"] = TargetArtifact("llvm-cpu", "local-task", {m.file: [] for m in modules}, [], stamped)
    written.write(tmp_path)
    assert read_manifest(tmp_path).targets["llvm-cpu"].entry_points == stamped
    assert json.loads((tmp_path / "manifest.json").read_text())["targets"]["llvm-cpu"]["entry_points"][0]["inputs"] == [
        "tokens", "positions"]
