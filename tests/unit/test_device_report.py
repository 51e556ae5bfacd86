"""lse.tools.device_check's report: the HBM share's arithmetic, pytest's
junit file read back (IREE's message kept), and the markdown page."""

from __future__ import annotations

import json

from lse.tools.device_bench import hbm_share
from lse.tools.device_check import build_parser, junit_cases
from lse.tools.device_report import to_markdown, write_report

IREE_ERROR = ("ValueError: Error creating device: INTERNAL; CUDA driver error 'CUDA_ERROR_NO_DEVICE' (100): "
              "no CUDA-capable device is detected")

REPORT = {
    "started": "2026-12-03T09:00:00+00:00",
    "machine": {"python": "3.11.9", "gpu": "NVIDIA H200, 143771 MiB, 570.86"},
    "target": {"name": "cuda", "flags": ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"]},
    "seeded": {"llama": "seeded", "default": "cached"},
    "tests": {"command": "LSE_DEVICE_TESTS=1 pytest -m device tests/device", "returncode": 1, "seconds": 12.5,
              "output_tail": "",
              "cases": [{"name": "tests.device.test_cuda::test_fixture_matches_the_reference[llama]",
                         "outcome": "passed", "seconds": 3.1},
                        {"name": "tests.device.test_cuda::test_no_cpu_fallback_serves_a_model_the_gpu_runs_whole",
                         "outcome": "failed", "seconds": 0.4, "message": IREE_ERROR,
                         "text": f"Traceback ...\n{IREE_ERROR}"}]},
    "bench": [{"case": "default-bench", "model": "default", "kv_len": 4096, "slots": 64,
               "weight_bytes_per_token": 100 * 2**20, "device": "cuda:0", "open_s": 4.2,
               "prefill": [{"tokens": 512, "seconds": 0.05, "tok_s": 10240.0}],
               "decode": [{"streams": 1, "tokens": 127, "seconds": 0.5, "tok_s": 254.0,
                           "hbm_share": hbm_share(100 * 2**20, 254.0, 1)}],
               "error": "RuntimeError: a stream failed: {'type': 'error', 'status': 500}"}],
}


def test_hbm_share_is_weight_bytes_a_step_times_steps_a_second_over_4_8_tb_s():
    assert hbm_share(2_400_000_000, 1000.0, 1) == 0.5  # 2.4 GB x 1000 steps/s = 2.4 TB/s
    assert hbm_share(2_400_000_000, 8000.0, 8) == 0.5  # 8 streams: the weights are read once a step
    assert hbm_share(1_000, 10.0, 1, bandwidth=100.0) == 100.0


def test_markdown_report():
    md = to_markdown(REPORT)
    lines = md.splitlines()
    assert lines[0] == "# LSE device check"
    assert "| gpu | NVIDIA H200, 143771 MiB, 570.86 |" in lines
    assert "Target `cuda`: `--iree-hal-target-device=cuda --iree-cuda-target=sm_80`" in lines
    assert "| llama | seeded |" in lines
    assert "`LSE_DEVICE_TESTS=1 pytest -m device tests/device`: exit 1, 1 failed, 1 passed, 12.5 s" in lines
    assert "| `tests.device.test_cuda::test_fixture_matches_the_reference[llama]` | passed | 3.1 |  |" in lines
    assert (f"| `tests.device.test_cuda::test_no_cpu_fallback_serves_a_model_the_gpu_runs_whole` | failed | 0.4 | "
            f"{IREE_ERROR} |") in lines
    assert "### tests.device.test_cuda::test_no_cpu_fallback_serves_a_model_the_gpu_runs_whole" in lines
    assert IREE_ERROR in lines  # the traceback's text, IREE's words last
    assert "## Throughput: default-bench (default, 64 slots, context 4096)" in lines
    assert "Weights read per decode step: 100.0 MiB. Device cuda:0, opened in 4.2 s." in lines
    assert "| 512 tokens | 0.05 | 10,240 |" in lines
    assert "| 1 stream(s) | 127 | 0.5 | 254 | 0.6% |" in lines  # 104857600 B x 254 /s / 4.8e12 B/s
    assert "RuntimeError: a stream failed: {'type': 'error', 'status': 500}" in lines
    assert md.endswith("```\n")


def test_write_report_writes_the_json_as_measured_and_the_page(tmp_path):
    js, md = write_report(REPORT, tmp_path / "out")
    assert json.loads(js.read_text()) == REPORT
    assert md.read_text() == to_markdown(REPORT)


def test_junit_cases_keep_the_failure_text(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(f"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.device.test_cuda" name="test_a" time="1.234"/>
<testcase classname="tests.device.test_cuda" name="test_b" time="0.5"><failure message="{IREE_ERROR}">trace
{IREE_ERROR}</failure></testcase>
<testcase classname="tests.device.test_cuda" name="test_c" time="0"><skipped message="device tier: off">s</skipped>
</testcase></testsuite></testsuites>""")
    assert junit_cases(xml) == [
        {"name": "tests.device.test_cuda::test_a", "outcome": "passed", "seconds": 1.23},
        {"name": "tests.device.test_cuda::test_b", "outcome": "failed", "seconds": 0.5, "message": IREE_ERROR,
         "text": f"trace\n{IREE_ERROR}"},
        {"name": "tests.device.test_cuda::test_c", "outcome": "skipped", "seconds": 0.0,
         "message": "device tier: off", "text": "s"}]


def test_the_one_command_runs_the_device_step_by_default():
    args = build_parser().parse_args([])
    assert args.step == "run" and args.out is None and args.model == []
    assert build_parser().parse_args(["compile", "--model", "/m/7b"]).model == ["/m/7b"]
