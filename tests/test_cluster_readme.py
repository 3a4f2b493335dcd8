"""The cluster README (``kubernetes/<cluster>/README.md``) is a runbook: each command must work
on a fresh cluster when run in the order written."""

from __future__ import annotations

import re
import shlex
from functools import cache

import pytest
import yaml

from estategen import load, pipeline
from estategen.output import Files
from estategen.render import render

from conftest import BLUEPRINTS

EXAMPLES = sorted(p.name for p in BLUEPRINTS.glob("*.yaml"))
# namespaces every cluster has before anything is installed
# every cluster's own namespaces, and those of the GitOps engines (their installation makes
# them; a README's "Synced by" section starts from an installed engine)
BUILT_IN = {"default", "kube-system", "kube-public", "kube-node-lease", "flux-system", "argocd"}


@cache
def rendered(name: str) -> Files:
    document = load.read_blueprint(BLUEPRINTS / name)
    return render(pipeline.validate_document(document).estate)


def readmes(name: str) -> dict[str, str]:
    files = rendered(name)
    return {
        path.removesuffix("/README.md"): files[path].content.decode()
        for path in files
        if re.fullmatch(r"kubernetes/[^/]+/README\.md", path)
    }


def commands(readme: str) -> list[list[str]]:
    """The shell commands of the README's code blocks, in order, as argument lists."""
    out = []
    inside = False
    for line in readme.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            continue
        if inside and line.strip() and not line.strip().startswith("#"):
            out.append(shlex.split(line.strip()))
    return out


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


CASES = [(name, folder) for name in EXAMPLES for folder in readmes(name)]


@pytest.mark.parametrize(("name", "folder"), CASES, ids=[f"{n}:{f}" for n, f in CASES])
def test_every_namespace_a_command_needs_exists_when_it_runs(name: str, folder: str) -> None:
    """helm v3.19.5 cmd/helm/install.go:177 ``--create-namespace`` "create the release
    namespace if not present", pkg/action/install.go:367 ``if i.CreateNamespace``: without the
    flag Helm creates no namespace, and the install fails on a fresh cluster whose namespace
    a later step makes. So does ``kubectl create secret --namespace`` into a missing one. Each
    ``helm upgrade --install`` has --create-namespace or targets a namespace an earlier
    command created (or one every cluster has)."""
    files = rendered(name)
    exists = set(BUILT_IN)
    checked = 0
    for argv in commands(readmes(name)[folder]):
        namespace = option(argv, "--namespace")
        if argv[:3] == ["kubectl", "create", "namespace"]:
            exists.add(argv[3])
        elif argv[:2] == ["kubectl", "apply"] and f"{folder}/{option(argv, '-f')}" in files:
            applied = files[f"{folder}/{option(argv, '-f')}"].content
            exists |= {
                o["metadata"]["name"]
                for o in yaml.safe_load_all(applied)
                if o and o["kind"] == "Namespace"
            }
        elif argv[:3] == ["helm", "upgrade", "--install"]:
            assert namespace is not None, argv
            if "--create-namespace" in argv:
                exists.add(namespace)
            assert namespace in exists, f"{folder}: {' '.join(argv[:4])} into {namespace}"
            checked += 1
        elif argv[:3] == ["kubectl", "create", "secret"] or argv[:2] == ["kubectl", "--namespace"]:
            namespace = namespace or argv[2]
            assert namespace in exists, f"{folder}: a Secret in {namespace} before it exists"
    assert checked, f"{folder}: no helm release in its README"
