"""How big a blueprint may be: bounds that keep every command under 10 s and 1 GiB on 2 cores.

Each is enforced before the work it bounds: values while the YAML is parsed (before any node
graph is built), list lengths before the schema runs, hosts before any hostlist is expanded.
``benchmarks/limits.py`` runs the largest blueprint each allows; the Limits table of
docs/blueprint.md states them. The 100,000-GPU benchmark estate (blueprints/large.py: 34,000
values, 250 pools, 200 partitions, 300 teams, 3,000 users) stays well inside every one.
"""

from __future__ import annotations

# YAML values a blueprint may hold (keys, values and list items), counted once as written and
# again with aliases expanded.
MAX_VALUES = 250_000

# Items of the lists whose every item becomes files, lines or objects in each output.
MAX_POOLS = 2_000
MAX_PARTITIONS = 1_000
MAX_TEAMS = 2_000
MAX_USERS = 20_000
# each becomes a line of reservations.scontrol; the checks compare those whose times meet
MAX_RESERVATIONS = 1_000

# Hosts an estate may hold in its pools, and name in its reservations
# (checks.hosts_within_bounds); a file read back or imported names no more in one hostlist.
MAX_ESTATE_HOSTS = 100_000

# Findings one run lists; the rest are counted in one closing finding.
MAX_FINDINGS = 1_000

# Characters of a user's value, key or path that a message quotes.
MAX_QUOTED = 60

MAX_LIST_ITEMS: dict[str, tuple[int, str]] = {
    "node_pools": (MAX_POOLS, "node pools"),
    "slurm.partitions": (MAX_PARTITIONS, "partitions"),
    "identity.teams": (MAX_TEAMS, "teams"),
    "identity.users": (MAX_USERS, "users"),
    "slurm.reservations": (MAX_RESERVATIONS, "reservations"),
}
