"""Checks for what the Kubernetes stacks can build: managed pools, MIG and sharing on clusters.

They live inside existing check functions (pool_fields_for_provider, pool_cluster_resolves,
sharing_fits_scheduler), so each test runs the one check function that owns the rule on a
small blueprint, once where it passes and once where it fails.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable

import pytest

from estategen import checks, load, model, pipeline, schema
from estategen.errors import BlueprintInvalid, Finding
from estategen.model import Estate

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
    normalised, problems = schema.normalise(document.data)
    assert not problems, [(p.path, p.message) for p in problems]
    return model.build(normalised)


def findings(check: Callable[[Estate], Iterable[Finding]], **kwargs: str) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in check(estate(**kwargs))]


def test_gke_and_eks_pools_pass_the_provider_checks() -> None:
    assert findings(checks.pool_fields_for_provider) == []
    eks = {"provider": "eks", "instance_type": "p5.48xlarge"}
    assert findings(checks.pool_fields_for_provider, **eks) == []


def test_aks_pools_are_refused_with_a_way_out() -> None:
    found = findings(
        checks.pool_fields_for_provider, provider="aks", instance_type="Standard_ND96isr_H100_v5"
    )
    assert found == [
        (
            "node_pools[0].provider",
            "estategen does not render AKS node pools (azure-native AgentPool) yet; "
            "use provider gke or eks, or manage this pool outside estategen",
        )
    ]


def test_aks_refusal_reaches_the_user_with_its_line() -> None:
    text = BLUEPRINT.format(
        provider="aks",
        instance_type="Standard_ND96isr_H100_v5",
        gpus="{model: h100-sxm-80gb, count: 8}",
        install="device-plugin",
        strategy="none",
    )
    with pytest.raises(BlueprintInvalid) as caught:
        pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))
    (aks,) = [f for f in caught.value.findings if "AKS" in f.message]
    assert (aks.path, aks.line) == ("node_pools[0].provider", 8)


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


def test_eks_instance_type_must_carry_the_pools_gpu() -> None:
    found = findings(
        checks.pool_fields_for_provider,
        provider="eks",
        instance_type="g6.12xlarge",
        gpus="{model: l40s-48gb, count: 4}",
    )
    assert found == [
        (
            "node_pools[0].instance_type",
            "g6.12xlarge is not a g6e instance, the EKS family that carries l40s-48gb; "
            "use a g6e.* instance type",
        )
    ]
    assert (
        findings(
            checks.pool_fields_for_provider,
            provider="eks",
            instance_type="g6e.12xlarge",
            gpus="{model: l40s-48gb, count: 4}",
        )
        == []
    )


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
