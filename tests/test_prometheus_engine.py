"""A real Prometheus on the rendered configuration scrapes the estate's exporters.

Debian's `prometheus` loads the rendered `prometheus.yml` (its rules and file_sd targets as
rendered; only the scrape and evaluation intervals are shortened so the test is quick) and
scrapes Debian's `prometheus-node-exporter`, whose textfile collector reads the
`estategen_node_info` file that Ansible renders from the node_exporter role's template with
the rendered variables, and stand-in DCGM and Slurm exporter endpoints (small HTTP servers
serving metric text as those exporters write it: neither exporter runs without its hardware
or cluster). The blueprint puts the estate's one host on `localhost` with free ports.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load
from estategen.pipeline import validate_document
from estategen.render import render

from ansible_template import ANSIBLE_PLAYBOOK, template

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (PROMETHEUS and NODE_EXPORTER and ANSIBLE_PLAYBOOK),
        reason="needs Debian's prometheus and prometheus-node-exporter, and ansible-playbook",
    ),
]

BLUEPRINT = """\
estate: probe
node_pools:
  - name: gpu
    scheduler: slurm
    hosts: localhost
    cpu: {{sockets: 1, cores_per_socket: 2, threads_per_core: 1}}
    memory_gb: 4
    gpus: {{model: l4-24gb, count: 2}}
slurm:
  controllers: [localhost]
  partitions:
    - {{name: gpu, pools: [gpu], default: true}}
observability:
  node_exporter: {{port: {node}}}
  dcgm_exporter: {{port: {dcgm}}}
  slurm_exporter: {{port: {slurm}}}
  labels: {{site: lab-a, rack: r07}}
"""

# as dcgm-exporter 4.x writes them (labels gpu, UUID, device, modelName, Hostname, ...)
DCGM_TEXT = "".join(
    f"# HELP {field} {help}\n# TYPE {field} gauge\n"
    + "".join(
        f'{field}{{gpu="{gpu}",UUID="GPU-0000000{gpu}",pci_bus_id="00000000:0{gpu}:00.0",'
        f'device="nvidia{gpu}",modelName="NVIDIA L4",Hostname="localhost",'
        f'DCGM_FI_DRIVER_VERSION="570.86.15"}} {value}\n'
        for gpu, value in ((0, busy), (1, idle))
    )
    for field, help, busy, idle in (
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 80, 0),
        ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", 20000, 0),
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", 61.5, 16.2),
        ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", 0, 0),
    )
)
# as the Slurm exporter (sckyzo/slurm_exporter) writes them
SLURM_TEXT = """\
# HELP slurm_scheduler_threads Number of scheduler threads
# TYPE slurm_scheduler_threads gauge
slurm_scheduler_threads 3
# HELP slurm_node_status Node Status with partition
# TYPE slurm_node_status gauge
slurm_node_status{node="localhost",partition="gpu",status="mixed"} 1
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def serve(text: str, port: int) -> ThreadingHTTPServer:
    body = text.encode()

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())["data"]


def wait_for(url: str, ready: Any, seconds: float = 20) -> Any:
    deadline = time.monotonic() + seconds
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = get(url)
            if ready(last):
                return last
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"{url} not ready in {seconds}s; last answer: {json.dumps(last)[:2000]}")


def quick(config_path: Path) -> None:
    """Shorten the scrape and evaluation intervals; everything else stays as rendered."""
    config = yaml.safe_load(config_path.read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    for job in config["scrape_configs"]:
        job.pop("scrape_interval", None)
        job["scrape_timeout"] = "1s"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.terminate()
    for process in started:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_a_real_prometheus_scrapes_every_rendered_target_with_the_estate_labels(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    ports = {name: free_port() for name in ("node", "dcgm", "slurm", "prometheus")}
    text = BLUEPRINT.format(**ports)
    estate = validate_document(load.parse_blueprint(text.encode(), "probe.yaml")).estate
    out = tmp_path / "out"
    for path, output in render(estate).items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(output.content)
    prometheus_dir = out / "observability" / "prometheus"
    quick(prometheus_dir / "prometheus.yml")

    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    template(
        out / "ansible",
        "pool_gpu",
        "node_exporter/templates/estate.prom.j2",
        textfiles / "estate.prom",
    )
    assert NODE_EXPORTER and PROMETHEUS
    processes.append(
        subprocess.Popen(
            [
                NODE_EXPORTER,
                f"--web.listen-address=127.0.0.1:{ports['node']}",
                "--collector.disable-defaults",
                "--collector.textfile",
                f"--collector.textfile.directory={textfiles}",
                "--collector.loadavg",
                "--collector.meminfo",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    servers = [serve(DCGM_TEXT, ports["dcgm"]), serve(SLURM_TEXT, ports["slurm"])]
    processes.append(
        subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={prometheus_dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / "prometheus.log").open("wb"),
        )
    )
    api = f"http://127.0.0.1:{ports['prometheus']}/api/v1"
    try:
        expected = {
            ("node-exporter", f"localhost:{ports['node']}"),
            ("dcgm-exporter", f"localhost:{ports['dcgm']}"),
            ("slurm-exporter", f"localhost:{ports['slurm']}"),
        }

        def all_up(data: Any) -> bool:
            targets = data["activeTargets"]
            return len(targets) == len(expected) and all(t["health"] == "up" for t in targets)

        targets = wait_for(f"{api}/targets", all_up)["activeTargets"]
        assert {(t["labels"]["job"], t["labels"]["instance"]) for t in targets} == expected
        for target in targets:
            # the estate labels and nothing else: the same set the ServiceMonitor gives
            assert target["labels"] == {
                "job": target["labels"]["job"],
                "instance": target["labels"]["instance"],
                "rack": "r07",
                "site": "lab-a",
            }
            assert target["discoveredLabels"]["__meta_estategen_scheduler"] == "slurm"

        # the recording rules join the real node exporter's node info with the GPU series
        def utilisation(data: Any) -> bool:
            return len(data["result"]) == 2

        query = f"{api}/query?query=estategen:gpu_utilisation:ratio"
        series = wait_for(query, utilisation)["result"]
        assert {s["metric"]["gpu"]: float(s["value"][1]) for s in series} == {"0": 0.8, "1": 0.0}
        for sample in series:
            assert {k: sample["metric"][k] for k in ("estate", "pool", "scheduler", "site")} == {
                "estate": "probe",
                "pool": "gpu",
                "scheduler": "slurm",
                "site": "lab-a",
            }
        rules = get(f"{api}/rules")["groups"]
        broken = [
            (r["name"], r.get("lastError"))
            for g in rules
            for r in g["rules"]
            if r["health"] == "err"
        ]
        assert broken == []
        firing = [a["labels"]["alertname"] for a in get(f"{api}/alerts")["alerts"]]
        assert firing == []
    finally:
        for server in servers:
            server.shutdown()
