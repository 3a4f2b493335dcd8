"""Blueprint keys declared once: what each is, its bounds, its documentation, its examples,
what a change to it needs, and the slurm.conf parameter it is.

Every other place a key appears is derived from its declaration here: the schema's rule (its
bounds or words), the JSON Schema and the blueprint reference (description, examples, change
policy, and through them ``estategen plan``'s routing), the model's value, the slurm.conf line,
and the mapping ``estategen import`` reads the site's parameter back with. Adding such a key is
one declaration, its field on the model, and its tests (tests/test_declarations.py tests every
declaration without new test code).

Kinds of key declared here so far: a partition's one-value parameters
(:data:`PARTITION_PARAMETERS`), a QoS's one-value settings (:data:`QOS_PARAMETERS`) and a node
pool's whole-number NodeName parameters (:data:`NODE_POOL_PARAMETERS`).
"""

from __future__ import annotations

from dataclasses import dataclass

# A partition's OverSubscribe, as slurm.conf(5) spells it in lower case.
OVERSUBSCRIBE = r"(no|exclusive|(yes|force)(:[1-9][0-9]{0,3})?)"


@dataclass(frozen=True)
class WholeNumber:
    """A whole number from ``low`` to ``high``."""

    low: int
    high: int
    # slurmctld reads the word UNLIMITED (or INFINITE) for this parameter; import reads it as
    # the key left out
    unlimited_word: bool = False


@dataclass(frozen=True)
class YesNo:
    """true or false, which slurm.conf writes YES or NO."""


@dataclass(frozen=True)
class OneOf:
    """One of ``words`` (lower case), which slurm.conf writes in upper case."""

    words: tuple[str, ...]


@dataclass(frozen=True)
class Word:
    """A lower-case word matching ``pattern``, a regular expression whose hint
    schema.patterns.PATTERN_HINTS holds; slurm.conf writes it in upper case."""

    pattern: str


@dataclass(frozen=True)
class Time:
    """A Slurm time (minutes, [D-]H:M:S, UNLIMITED...), which checks.slurm_times_valid reads
    through and the render writes as slurmctld shows it (model.slurm_time)."""


@dataclass(frozen=True)
class Factor:
    """A finite decimal number from ``low`` to ``high``."""

    low: float
    high: float


# the kinds a partition parameter has so far (import reads each from slurm.conf)
PartitionValue = WholeNumber | YesNo | OneOf | Word
Value = PartitionValue | Time | Factor


@dataclass(frozen=True)
class PartitionParameter:
    """A partition key that is one slurm.conf parameter of the PartitionName line, written only
    when the blueprint sets it (Slurm's default applies otherwise). Import reads the site's
    value back as the key's."""

    key: str  # the blueprint key under slurm.partitions[]
    slurm: str  # the parameter as slurm.conf(5) spells it
    value: PartitionValue
    description: str
    examples: tuple[object, ...]
    # the model holds it among the partition's site overrides (model.PartitionOverrides); False:
    # on model.Partition itself, and the schema lists it among the partition's own keys
    site_override: bool = True
    # the names slurm.conf(5) still reads for the parameter (import maps them too)
    old_names: tuple[str, ...] = ()
    # what a change to it needs (schema.CHANGE_POLICIES): slurmctld rereads partition lines
    change: tuple[str, ...] = ("scontrol-reconfigure",)

    @property
    def path(self) -> str:
        return f"slurm.partitions[].{self.key}"

    def slurm_text(self, value: object) -> str:
        """The parameter's value as the PartitionName line writes it."""
        if isinstance(self.value, YesNo):
            return "YES" if value else "NO"
        if isinstance(self.value, WholeNumber):
            return str(value)
        return str(value).upper()


# In the order the PartitionName line writes them; bounds are slurm.conf(5)'s (a count up to
# 4294967294, memory in MiB up to 64 TiB).
PARTITION_PARAMETERS: tuple[PartitionParameter, ...] = (
    PartitionParameter(
        "priority_job_factor",
        "PriorityJobFactor",
        WholeNumber(0, 65_533),
        "PriorityJobFactor: the partition's part of a job's priority (with the partition weight).",
        (10,),
    ),
    PartitionParameter(
        "preempt_mode",
        "PreemptMode",
        OneOf(("off", "cancel", "requeue", "suspend")),
        "PreemptMode of the partition's jobs. Slurm reads it only with preemption.type "
        "partition_prio; with type qos it must be the mode that applies anyway "
        "(preemption.mode), and a QoS's preempt_mode sets another.",
        ("requeue",),
        site_override=False,
    ),
    PartitionParameter(
        "oversubscribe",
        "OverSubscribe",
        Word(OVERSUBSCRIBE),
        "Partition OverSubscribe: no, exclusive, yes or force, with :N jobs per resource for "
        "yes or force.",
        ("exclusive", "force:4"),
        old_names=("Shared",),
    ),
    PartitionParameter(
        "exclusive_user",
        "ExclusiveUser",
        YesNo(),
        "ExclusiveUser: true gives each allocated node to one user at a time (that user's jobs "
        "may share it); false lets users share nodes, as Slurm does by default.",
        (True,),
    ),
    PartitionParameter(
        "grace_time",
        "GraceTime",
        WholeNumber(0, 4_294_967_294),
        "GraceTime (seconds): how long a preempted job has to end after SIGTERM.",
        (120,),
    ),
    PartitionParameter(
        "min_nodes",
        "MinNodes",
        WholeNumber(0, 4_294_967_294),
        "MinNodes per job: a job asking for fewer nodes is refused at submission "
        "(EnforcePartLimits=ALL); at most max_nodes and the partition's nodes.",
        (2,),
    ),
    PartitionParameter(
        "max_nodes",
        "MaxNodes",
        WholeNumber(1, 4_294_967_294, unlimited_word=True),
        "MaxNodes per job.",
        (16,),
    ),
    PartitionParameter(
        "max_cpus_per_node",
        "MaxCPUsPerNode",
        WholeNumber(1, 4_294_967_294, unlimited_word=True),
        "MaxCPUsPerNode a partition's jobs may use together on one node.",
        (32,),
    ),
    PartitionParameter(
        "max_mem_per_cpu",
        "MaxMemPerCPU",
        WholeNumber(1, 67_108_864, unlimited_word=True),
        "MaxMemPerCPU (MiB); not with max_mem_per_node.",
        (8000,),
    ),
    PartitionParameter(
        "max_mem_per_node",
        "MaxMemPerNode",
        WholeNumber(1, 67_108_864, unlimited_word=True),
        "MaxMemPerNode (MiB); not with max_mem_per_cpu.",
        (250000,),
    ),
)


@dataclass(frozen=True)
class QosParameter:
    """A QoS key that is one field of the QoS's ``modify qos`` line in qos.sacctmgr, with one
    value. The line always tells sacctmgr every such field (the line also undoes what an
    earlier render set): the blueprint's value, its ``default``, or, for a key the blueprint
    leaves out, the ``unset`` word that gives the QoS no value of its own. Import does not read
    them: a ``sacctmgr dump`` writes no QoS (importer.accounts)."""

    key: str  # the blueprint key under slurm.qos[]
    sacctmgr: str  # the field as sacctmgr(1) spells it
    value: Value
    description: str
    examples: tuple[object, ...]
    default: object = None  # the schema's default, which the model always holds then
    unset: str = ""  # what the line says for a key left out (without a default)
    # what a change to it needs (schema.CHANGE_POLICIES): QoS live in slurmdbd
    change: tuple[str, ...] = ("sacctmgr",)

    @property
    def path(self) -> str:
        return f"slurm.qos[].{self.key}"


# In the order the ``modify qos`` line writes them.
QOS_PARAMETERS: tuple[QosParameter, ...] = (
    QosParameter(
        "priority",
        "Priority",
        WholeNumber(0, 1_000_000),
        "The QoS priority (weighted by priority_weights.qos).",
        (100,),
        default=0,
    ),
    QosParameter(
        "usage_factor",
        "UsageFactor",
        Factor(0, 1000),
        "How much usage counts toward Fairshare (0 makes it free).",
        (0,),
        default=1,
    ),
    QosParameter(
        "preempt_mode",
        "PreemptMode",
        OneOf(("cancel", "requeue")),
        "How jobs of this QoS are preempted (the QoS's PreemptMode), instead of "
        "slurm.scheduling.preemption.mode; needs preemption.type qos, where Slurm reads it.",
        ("cancel",),
        # the QoS's jobs follow the cluster-wide PreemptMode
        unset="cluster",
    ),
    QosParameter(
        "max_time",
        "MaxWall",
        Time(),
        "The longest wall time under this QoS (MaxWall).",
        ("1-00:00:00",),
        unset="-1",
    ),
)


@dataclass(frozen=True)
class NodePoolParameter:
    """A node pool key that is one whole-number parameter of the pool's slurm.conf NodeName
    line. The line always writes the parameter: the blueprint's value, else the one estategen
    derives from the pool (slurm_facts.node_line says how). Import reads the site's value back
    as the key's (the pool's shape: nodes that differ in it are different pools, but for
    Weight, which host_weights holds host by host); a value beyond the bounds is refused and
    the nearest bound kept."""

    key: str  # the blueprint key under node_pools[]
    slurm: str  # the parameter as slurm.conf(5) spells it
    value: WholeNumber
    description: str
    examples: tuple[object, ...]
    # what a change to it needs (schema.CHANGE_POLICIES)
    change: tuple[str, ...]
    # what slurmctld takes for a NodeName line without the parameter (slurm.conf(5)), which
    # import reads as the site's value
    slurm_default: int = 1
    # how import's mapping names the key (after its path)
    import_note: str = ""

    @property
    def path(self) -> str:
        return f"node_pools[].{self.key}"


# In the order the NodeName line writes them (memory in MiB up to 64 TiB, as a partition's;
# Weight up to 4294967293, as host_weights' items). Both default to 1 in slurm.conf(5).
NODE_POOL_PARAMETERS: tuple[NodePoolParameter, ...] = (
    NodePoolParameter(
        "real_memory_mib",
        "RealMemory",
        WholeNumber(1, 67_108_864),
        "The nodes' exact RealMemory in MiB, as the site's slurm.conf has it. Without it "
        "RealMemory is memory_gb less estategen's reserve (5%, at least 2 GiB, at most half). "
        "At most memory_gb in MiB; the memory health check and the partitions' default memory "
        "per CPU and per GPU follow it.",
        (515000,),
        change=("restart-slurm-daemons",),
    ),
    NodePoolParameter(
        "weight",
        "Weight",
        WholeNumber(1, 4_294_967_293),
        "Slurm node Weight; by default 1 for CPU nodes and 1 + GPU memory for GPU nodes, so "
        "small jobs land on the smallest fitting hardware.",
        (100,),
        change=("scontrol-reconfigure",),
        import_note="host_weights where hosts differ",
    ),
)


def documentation() -> dict[str, dict[str, object]]:
    """The reference entry of each declared key, by key path, as data/schema-docs.yaml
    writes the keys not declared here."""
    parameters: tuple[PartitionParameter | QosParameter | NodePoolParameter, ...] = (
        *PARTITION_PARAMETERS,
        *QOS_PARAMETERS,
        *NODE_POOL_PARAMETERS,
    )
    return {
        parameter.path: {
            "description": parameter.description,
            "examples": list(parameter.examples),
            "change": list(parameter.change),
        }
        for parameter in parameters
    }
