"""--threads: the engine runs that many IREE CPU workers, says so in its
startup log, and a second engine of the process can't ask for another
count. In a subprocess: IREE makes one worker pool a process, and this
one's was made by other tests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lse.fixtures.make_fixtures import fixture_dir

SCRIPT = """
import json, os, sys, time
from lse.runtime.api import LseStartupError, lse_open, lse_request
engine = lse_open({"model": sys.argv[1], "kv_len": 64, "threads": int(sys.argv[2])})
status, body = lse_request(engine, {"prompt": [1, 2, 3], "max_tokens": 4, "temperature": 0}, "completions").result()
def named():
    return sorted(n for n in (open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))
                  if n.startswith("iree-worker-"))
deadline = time.monotonic() + 10  # each worker names itself once it runs: a busy machine may lag
while len(named()) < int(sys.argv[2]) and time.monotonic() < deadline:
    time.sleep(0.05)
workers = named()
try:
    lse_open({"model": sys.argv[1], "kv_len": 64, "threads": int(sys.argv[2]) + 1})
    refused = None
except LseStartupError as e:
    refused = str(e)
print(json.dumps({"workers": workers, "status": status,
                  "log": engine.log_lines, "refused": refused}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="counts threads by name in /proc")
@pytest.mark.parametrize("threads", [1, 3])
def test_threads_is_the_worker_count(threads):
    model = str(fixture_dir("llama"))
    out = subprocess.run([sys.executable, "-c", SCRIPT, model, str(threads)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["workers"] == [f"iree-worker-{i}" for i in range(threads)]
    assert got["status"] == 200
    assert f"lse: device local:0, {threads} worker thread(s)" in got["log"]
    assert f"threads={threads + 1}: this process's CPU workers were started with {threads}" in got["refused"]


OPEN_ONLY = """
from lse.runtime.devices import DeviceError, choose_device
try:
    print(choose_device(["local:0"], False, 3).name)
except DeviceError as e:
    print(e)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="IREE's workers name themselves on Linux")
def test_a_pool_lse_starts_is_never_refused_while_its_workers_start():
    """In a fresh process the pool is LSE's: right after the device comes up
    some of its 3 workers have not named themselves yet, and that partial
    count is no reason to refuse (3 processes: the race was lost in most)."""
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", OPEN_ONLY], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == "local:0"
