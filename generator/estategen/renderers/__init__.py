"""Renderer modules; importing this package registers them in :data:`estategen.render.RENDERERS`."""

from estategen.renderers import ansible, estate_json, kubernetes, observability, pulumi, slurm  # noqa: F401
