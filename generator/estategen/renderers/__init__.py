"""Renderer modules; importing this package registers them in :data:`estategen.output.RENDERERS`."""

from estategen.renderers import (  # noqa: F401
    ansible,
    estate_json,
    grafana,
    kubernetes,
    observability,
    pulumi,
    slurm,
)
