"""Mistakes in frontier's EKS parts end in a finding at their key, not an internal error.

Every check runs on a model that may hold another check's mistake: an autoscaled EKS pool whose
GPU model is in no catalog, or S3 storage offered to an EKS cluster without its s3 block, is
one error where it is written, under the 1 GiB cap and within seconds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from capped import SECONDS, run_capped

from conftest import BLUEPRINTS

FRONTIER = (BLUEPRINTS / "frontier.yaml").read_text()


def findings(tmp_path: Path, text: str) -> list[tuple[str, int, str]]:
    path = tmp_path / "frontier.yaml"
    path.write_text(text)
    run = run_capped("validate", path, "--format", "json")
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert run.seconds < SECONDS, run.seconds
    found = json.loads(run.stdout)["findings"]
    return [(f["path"], f["line"], f["rule"]) for f in found if f["level"] == "error"]


def line_of(text: str, needle: str) -> int:
    (line,) = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return line


def test_an_autoscaled_eks_pool_with_a_gpu_model_in_no_catalog_is_one_finding(
    tmp_path: Path,
) -> None:
    text = FRONTIER.replace(
        "gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}",
        "gpus: {model: l40s-96gb, count: 4, sharing: {time_slicing: 2}}",
    )
    assert text != FRONTIER
    pool = re.findall(r"  - name: ([a-z0-9-]+)", text).index("eks-l40s")
    found = findings(tmp_path, text)
    assert (
        f"node_pools[{pool}].gpus.model",
        line_of(text, "l40s-96gb"),
        "check/gpu-models-resolve",
    ) in found
    assert all(path.startswith(f"node_pools[{pool}]") or "quota" in path for path, _, _ in found)


def test_s3_storage_offered_to_an_eks_cluster_without_its_s3_block_is_a_finding_there(
    tmp_path: Path,
) -> None:
    block = (
        "    s3: {region: eu-west-1, access_key_id: {secret: s3_key_id},\n"
        "         secret_access_key: {secret: s3_secret_key}}\n"
    )
    assert block in FRONTIER
    text = FRONTIER.replace(block, "")
    storage = re.findall(r"  - \{?name: ([a-z0-9-]+)", text.split("\nstorage:", 1)[1])
    index = storage.index("datasets")
    assert findings(tmp_path, text) == [
        (f"storage[{index}].s3", line_of(text, "name: datasets"), "check/storage-types-and-drivers")
    ]
