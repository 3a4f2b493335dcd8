"""What rendering a blueprint would change in an output folder, and what each change means.

:func:`~estategen.plan.compare.plan` compares models, not texts: the render records the
validated model (``estate.json``); the plan loads the one in the folder, diffs it key by key
against the new one (:mod:`estategen.estatediff`) and derives the steps from each key's change
policy (the schema's ``x-estategen-change``) and the derived facts (which hosts, groups,
daemons and files): ``scontrol reconfigure``, a slurmctld restart, draining nodes,
``sacctmgr``, ``ansible-playbook --tags``. A ``slurm.options`` key follows
:mod:`estategen.slurm_keys`.

What the derived facts are on the Kubernetes and monitoring side is built from both models
with the renderers' own functions (:mod:`estategen.recorded` gives back the earlier model as an
:class:`Estate`): each cluster's objects, Helm values and Pulumi project data, compared object
by object (``pulumi up``, a Kueue object replaced, a MIG layout, a new project); the scrape
jobs, rules, targets and dashboard item by item (a Prometheus reload, copies).

No rendered file is ever read to decide a step: MANIFEST.json's digests say which files the
render changes, the folder's bytes only show hand edits since the last render, and a file the
models do not decide (a role, the Pulumi program, a kustomization) is explained by its path.

The package's modules, each below the ones that import it: :mod:`~estategen.plan.steps` (the
actions, changes and plan, and the steps they merge into), :mod:`~estategen.plan.values` (values
as a change shows them), :mod:`~estategen.plan.folder` (reading the output folder and its
recorded model), :mod:`~estategen.plan.files` (the files no model decides, by path),
:mod:`~estategen.plan.models` (the two models compared), :mod:`~estategen.plan.pools` (node
pools), :mod:`~estategen.plan.keys` (the other keys: Slurm, identity, storage; and
:func:`~estategen.plan.keys.model_changes`), :mod:`~estategen.plan.kubernetes` (each cluster's
objects, Helm values and Pulumi data), :mod:`~estategen.plan.observability` (Prometheus and
Grafana), :mod:`~estategen.plan.compare` (:func:`~estategen.plan.compare.plan`) and
:mod:`~estategen.plan.text` (the plan for people).
"""
