"""Checks for what the Kubernetes stacks can build: managed pools, MIG and sharing on clusters.

They live inside existing check functions (pool_fields_for_provider, pool_cluster_resolves,
sharing_fits_scheduler), so each test runs the one check function that owns the rule on a
small blueprint, once where it passes and once where it fails.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable

import pytest

from estategen import checks, load, model, pipeline
from estategen.errors import BlueprintInvalid, Finding
from estategen.model import Estate
from estategen.schema.validation import normalise

BLUEPRINT = """\
estate: cloud
identity:
  teams: [{{name: ml, gid: 30001}}]
node_pools:
  - name: gpu
    scheduler: kubernetes
    cluster: c
    provider: {provider}
    instance_type: {instance_type}
    nodes: {{min: 0, max: 2}}
    gpus: {gpus}
kubernetes:
  clusters:
    - name: c
      provider: {provider}
      region: europe-west4
      device_plugin: {{install: {install}, mig_strategy: {strategy}}}
"""


def estate(
    provider: str = "gke",
    instance_type: str = "a3-highgpu-8g",
    gpus: str = "{model: h100-sxm-80gb, count: 8}",
    install: str = "device-plugin",
    strategy: str = "single",
) -> Estate:
    text = BLUEPRINT.format(
        provider=provider,
        instance_type=instance_type,
        gpus=gpus,
        install=install,
        strategy=strategy,
    )
    document = load.parse_blueprint(textwrap.dedent(text).encode(), "bp.yaml")
    normalised, problems = normalise(document.data)
    assert not problems, [(p.path, p.message) for p in problems]
    return model.build(normalised)


def findings(check: Callable[[Estate], Iterable[Finding]], **kwargs: str) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in check(estate(**kwargs))]


def test_gke_and_eks_pools_pass_the_provider_checks() -> None:
    assert findings(checks.pool_fields_for_provider) == []
    eks = {"provider": "eks", "instance_type": "p5.48xlarge"}
    assert findings(checks.pool_fields_for_provider, **eks) == []


def test_aks_pools_pass_the_provider_checks() -> None:
    aks = {"provider": "aks", "instance_type": "Standard_ND96isr_H100_v5"}
    assert findings(checks.pool_fields_for_provider, **aks) == []


def test_aks_gpu_count_mismatch_reaches_the_user_with_its_line() -> None:
    text = BLUEPRINT.format(
        provider="aks",
        instance_type="Standard_ND96isr_H100_v5",
        gpus="{model: h100-sxm-80gb, count: 4}",
        install="device-plugin",
        strategy="none",
    ).replace("region: europe-west4", "region: westeurope\n      resource_group: rg-gpu")
    with pytest.raises(BlueprintInvalid) as caught:
        pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))
    (count,) = caught.value.findings
    assert (count.path, count.line) == ("node_pools[0].gpus.count", 11)
    assert count.message.startswith("Standard_ND96isr_H100_v5 has 8 h100-sxm-80gb GPUs")


@pytest.mark.parametrize(
    "mig",
    ["[1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]", "[3g.40gb, 3g.40gb]"],
)
def test_gke_mig_pool_with_one_full_partition_size_passes(mig: str) -> None:
    gpus = f"{{model: h100-sxm-80gb, count: 8, mig: {mig}}}"
    assert findings(checks.pool_fields_for_provider, gpus=gpus) == []


@pytest.mark.parametrize(
    ("mig", "wanted"),
    [
        ("[3g.40gb, 2g.20gb]", "for 3g.40gb on h100-sxm-80gb that is 2 x 3g.40gb"),
        ("[3g.40gb]", "that is 2 x 3g.40gb"),
        ("[1g.10gb, 1g.10gb]", "that is 7 x 1g.10gb"),
    ],
)
def test_gke_mig_pool_must_split_every_gpu_into_one_size(mig: str, wanted: str) -> None:
    gpus = f"{{model: h100-sxm-80gb, count: 8, mig: {mig}}}"
    ((path, message),) = findings(checks.pool_fields_for_provider, gpus=gpus)
    assert path == "node_pools[0].gpus.mig"
    assert "gpu_partition_size" in message and wanted in message


@pytest.mark.parametrize(
    ("provider", "instance_type", "gpus"),
    [
        ("gke", "a3-highgpu-8g", "{model: h100-sxm-80gb, count: 8}"),
        ("gke", "a3-highgpu-4g", "{model: h100-sxm-80gb, count: 4}"),
        ("gke", "g2-standard-32", "{model: l4-24gb, count: 1}"),
        ("eks", "p5.48xlarge", "{model: h100-sxm-80gb, count: 8}"),
        ("eks", "g6e.12xlarge", "{model: l40s-48gb, count: 4}"),
        ("eks", "g6e.16xlarge", "{model: l40s-48gb, count: 1}"),
    ],
)
def test_catalog_shapes_with_their_gpu_count_pass(
    provider: str, instance_type: str, gpus: str
) -> None:
    kwargs = {"provider": provider, "instance_type": instance_type, "gpus": gpus}
    assert findings(checks.instance_type_carries_gpus, **kwargs) == []


# A machine type without the model, and two that carry twice or half the GPUs `gpus.count`
# says: each would otherwise validate at a capacity its nodes do not have.
@pytest.mark.parametrize(
    ("provider", "instance_type", "gpus", "path", "wanted"),
    [
        (
            "gke",
            "n1-standard-8",
            "{model: h100-sxm-80gb, count: 8}",
            "node_pools[0].instance_type",
            "n1-standard-8 is not a gke machine type that carries h100-sxm-80gb. "
            "Machine types with h100-sxm-80gb, by GPU count: a3-highgpu-1g (1), "
            "a3-highgpu-2g (2), a3-highgpu-4g (4), a3-edgegpu-8g (8), a3-highgpu-8g (8)",
        ),
        (
            "gke",
            "a3-highgpu-8g",
            "{model: h100-sxm-80gb, count: 4}",
            "node_pools[0].gpus.count",
            "a3-highgpu-8g has 8 h100-sxm-80gb GPUs; set gpus.count to 8, "
            "or a machine type with 4: a3-highgpu-4g",
        ),
        (
            "eks",
            "g6e.12xlarge",
            "{model: l40s-48gb, count: 8}",
            "node_pools[0].gpus.count",
            "g6e.12xlarge has 4 l40s-48gb GPUs; set gpus.count to 4, "
            "or an instance type with 8: g6e.48xlarge",
        ),
    ],
)
def test_shapes_that_disagree_with_gpus_count_are_refused(
    provider: str, instance_type: str, gpus: str, path: str, wanted: str
) -> None:
    kwargs = {"provider": provider, "instance_type": instance_type, "gpus": gpus}
    assert findings(checks.instance_type_carries_gpus, **kwargs) == [(path, wanted)]


def test_instance_type_of_another_gpu_names_the_gpu_it_carries() -> None:
    ((path, message),) = findings(
        checks.instance_type_carries_gpus,
        provider="eks",
        instance_type="g6.12xlarge",
        gpus="{model: l40s-48gb, count: 4}",
    )
    assert path == "node_pools[0].instance_type"
    assert message.startswith("g6.12xlarge carries l4-24gb, not l40s-48gb. Instance types")
    assert "g6e.12xlarge (4)" in message


def test_misspelt_instance_type_gets_a_suggestion() -> None:
    ((path, message),) = findings(checks.instance_type_carries_gpus, instance_type="a3-highgpu8g")
    assert path == "node_pools[0].instance_type"
    assert "did you mean a3-highgpu-8g?" in message


def test_shape_disagreement_reaches_the_user_at_the_count_line() -> None:
    text = BLUEPRINT.format(
        provider="gke",
        instance_type="a3-highgpu-8g",
        gpus="{model: h100-sxm-80gb, count: 4}",
        install="device-plugin",
        strategy="none",
    )
    with pytest.raises(BlueprintInvalid) as caught:
        pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))
    (count,) = caught.value.findings
    assert (count.path, count.line) == ("node_pools[0].gpus.count", 11)


def test_aks_vm_size_must_carry_the_model() -> None:
    kwargs = {"provider": "aks", "instance_type": "Standard_ND96isr_H100_v5"}
    assert findings(checks.instance_type_carries_gpus, **kwargs) == []
    kwargs["instance_type"] = "Standard_ND96isr_H200_v5"
    ((path, message),) = findings(checks.instance_type_carries_gpus, **kwargs)
    assert path == "node_pools[0].instance_type"
    assert message.startswith("Standard_ND96isr_H200_v5 carries h200-sxm-141gb, not h100-sxm-80gb")
    assert "VM sizes with h100-sxm-80gb, by GPU count: Standard_ND96isr_H100_v5 (8)" in message


def test_gke_cluster_keeps_gkes_own_device_plugin() -> None:
    assert findings(checks.pool_cluster_resolves) == []
    found = findings(checks.pool_cluster_resolves, install="gpu-operator")
    assert [path for path, _ in found] == ["kubernetes.clusters[0].device_plugin.install"]
    assert "leave device_plugin.install at device-plugin" in found[0][1]


def test_mps_cannot_share_mig_devices() -> None:
    mig = "mig: [3g.40gb, 3g.40gb]"
    time_sliced = f"{{model: h100-sxm-80gb, count: 8, {mig}, sharing: {{time_slicing: 2}}}}"
    assert findings(checks.sharing_fits_scheduler, gpus=time_sliced) == []
    mps = f"{{model: h100-sxm-80gb, count: 8, {mig}, sharing: {{mps: 2}}}}"
    assert findings(checks.sharing_fits_scheduler, gpus=mps) == [
        (
            "node_pools[0].gpus.sharing.mps",
            "MIG devices cannot be shared with MPS; use time_slicing on a MIG pool",
        )
    ]
