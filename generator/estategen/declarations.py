"""Blueprint keys declared once: what each is, its bounds, its documentation, its example, what a
change to it needs, and the slurm.conf parameter it is.

Every other place a key appears is derived from its declaration here: the schema's rule (its
bounds), the JSON Schema and the blueprint reference (description, example, change policy, and
through them ``estategen plan``'s routing), the model's value, the slurm.conf line, and the
mapping ``estategen import`` reads the site's parameter back with. Adding such a key is one
declaration, its field on the model, and its tests.

Kinds of key declared here so far: a partition's integer limits (:data:`PARTITION_LIMITS`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionLimit:
    """A partition key that is one whole-number slurm.conf parameter of the PartitionName line,
    written only when the blueprint sets it (Slurm's default applies otherwise). Import reads
    the site's number back, and its UNLIMITED as the key left out where Slurm takes that word."""

    key: str  # the blueprint key under slurm.partitions[]
    slurm: str  # the parameter as slurm.conf(5) spells it
    low: int
    high: int
    description: str
    example: int
    # slurmctld reads the word UNLIMITED (or INFINITE) for this parameter
    unlimited_word: bool = True
    # what a change to it needs (schema.CHANGE_POLICIES): slurmctld rereads partition lines
    change: tuple[str, ...] = ("scontrol-reconfigure",)

    @property
    def path(self) -> str:
        return f"slurm.partitions[].{self.key}"


# In the order the PartitionName line writes them; bounds are slurm.conf(5)'s (a count up to
# 4294967294, memory in MiB up to 64 TiB).
PARTITION_LIMITS: tuple[PartitionLimit, ...] = (
    PartitionLimit(
        "grace_time",
        "GraceTime",
        0,
        4_294_967_294,
        "GraceTime (seconds): how long a preempted job has to end after SIGTERM.",
        120,
        unlimited_word=False,
    ),
    PartitionLimit(
        "min_nodes",
        "MinNodes",
        0,
        4_294_967_294,
        "MinNodes per job: a job asking for fewer nodes is refused at submission "
        "(EnforcePartLimits=ALL); at most max_nodes and the partition's nodes.",
        2,
        unlimited_word=False,
    ),
    PartitionLimit("max_nodes", "MaxNodes", 1, 4_294_967_294, "MaxNodes per job.", 16),
    PartitionLimit(
        "max_cpus_per_node",
        "MaxCPUsPerNode",
        1,
        4_294_967_294,
        "MaxCPUsPerNode a partition's jobs may use together on one node.",
        32,
    ),
    PartitionLimit(
        "max_mem_per_cpu",
        "MaxMemPerCPU",
        1,
        67_108_864,
        "MaxMemPerCPU (MiB); not with max_mem_per_node.",
        8000,
    ),
    PartitionLimit(
        "max_mem_per_node",
        "MaxMemPerNode",
        1,
        67_108_864,
        "MaxMemPerNode (MiB); not with max_mem_per_cpu.",
        250000,
    ),
)


def documentation() -> dict[str, dict[str, object]]:
    """The reference entry of each declared key, by key path, as data/schema-docs.yaml
    writes the keys not declared here."""
    return {
        limit.path: {
            "description": limit.description,
            "examples": [limit.example],
            "change": list(limit.change),
        }
        for limit in PARTITION_LIMITS
    }
