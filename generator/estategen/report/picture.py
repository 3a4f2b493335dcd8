"""The estate as one SVG picture: two scheduler lanes with their pools, and who draws on them.

The Slurm lane shows partitions above the pools they draw on; the Kubernetes lane shows each
cluster's pools above the team queues that draw on them; a third band lists the teams with
their share on both sides. Every pool is exactly one ``<rect class="pool" data-pool=NAME>``,
so tests (and people with a DOM inspector) can find each pool once.

Layout is arithmetic on counts only: the same report gives the same picture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from estategen.capacity import slots
from estategen.report.facts import TIMES, PoolFacts, Report, TeamFacts, mig_layout_text

MARGIN = 20
LANE_TITLE_H = 34
BOX_W = 232
GAP = 22
POOL_H = 112
PART_H = 64
QUEUE_H = 58
LINK_H = 46
TEAM_ROW_H = 40
CLUSTER_PAD = 12
MAX_CHARS = 30
LINE_CHARS = 33


def clip(text: str, limit: int = MAX_CHARS) -> str:
    """Text that fits a box; the full text stays in the box's tooltip."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Box:
    kind: str  # pool, partition, queue
    key: str
    x: float
    y: float
    w: float
    h: float
    lines: tuple[tuple[str, str], ...]  # (css class, text)
    title: str
    links: str
    name: str = ""
    side: str = "slurm"
    warn: int = 0
    bar: float = 0.0  # pools: share of the largest pool's GPUs, 0..1


@dataclass(frozen=True, slots=True)
class Link:
    a: str
    b: str
    path: str


@dataclass(frozen=True, slots=True)
class Frame:
    cls: str
    x: float
    y: float
    w: float
    h: float
    label: str


@dataclass(frozen=True, slots=True)
class TeamRow:
    key: str
    links: str
    y: float
    cells: tuple[tuple[float, str], ...]  # (x, text)
    share: float | None  # Slurm Fairshare share, 0..1
    slurm: str
    kube: str
    share_x: float


@dataclass(slots=True)
class Picture:
    width: float = 0
    height: float = 0
    frames: list[Frame] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    teams: list[TeamRow] = field(default_factory=list)
    teams_y: float = 0


def _row_x(count: int, left: float, width: float) -> list[float]:
    """x of ``count`` boxes centred in a band starting at ``left`` of ``width``."""
    used = count * BOX_W + max(count - 1, 0) * GAP
    start = left + (width - used) / 2
    return [start + i * (BOX_W + GAP) for i in range(count)]


def _band(count: int) -> float:
    return count * BOX_W + max(count - 1, 0) * GAP


def _curve(x1: float, y1: float, x2: float, y2: float) -> str:
    middle = (y1 + y2) / 2
    return f"M{x1:.1f},{y1:.1f} C{x1:.1f},{middle:.1f} {x2:.1f},{middle:.1f} {x2:.1f},{y2:.1f}"


def _pool_box(report: Report, facts: PoolFacts, x: float, y: float, largest: int) -> Box:
    pool = facts.pool
    lines = [
        ("name", clip(pool.name)),
        ("line", clip(f"{facts.nodes} · {facts.shape}", LINE_CHARS)),
    ]
    if pool.gpus:
        lines.append(
            (
                "line",
                clip(
                    " + ".join(f"{kind.count}{TIMES} {kind.model}" for kind in pool.gpus.types)
                    + f" = {pool.gpu_count} GPUs",
                    LINE_CHARS,
                ),
            )
        )
        count, what = slots(pool)
        if pool.gpus.mig:
            lines.append(
                ("slots", clip("MIG " + mig_layout_text(pool).replace(" + ", "+"), LINE_CHARS))
            )
            lines.append(("slots", f"→ {count} {what}"))
        elif what != "GPUs":
            sharing = pool.gpus.sharing
            factor = sharing.time_slicing or sharing.mps or sharing.shard
            lines.append(("slots", clip(f"{TIMES}{factor} → {count} {what}", LINE_CHARS)))
    else:
        lines.append(("line", "CPU only"))
    lines.append(
        (
            "line",
            clip(
                "mounts " + " ".join(facts.storage) if facts.storage else "no shared storage",
                LINE_CHARS,
            ),
        )
    )
    warnings = report.warnings_for_pool(pool.name)
    title = "\n".join(
        [
            f"pool {pool.name} ({facts.side})",
            facts.nodes,
            facts.shape,
            facts.gpus,
            facts.slots,
            f"partitions: {', '.join(facts.partitions) or '-'}",
            f"queues: {', '.join(facts.queues) or '-'}",
            f"storage: {', '.join(facts.storage) or '-'}",
            f"metrics: {facts.metrics}",
            *(f"warning: {w.message}" for w in warnings),
        ]
    )
    key = f"pool:{pool.name}"
    return Box(
        kind="pool",
        key=key,
        name=pool.name,
        side=pool.scheduler,
        x=x,
        y=y,
        w=BOX_W,
        h=POOL_H,
        lines=tuple(lines),
        title="\n".join(line for line in title.splitlines() if line),
        links=" ".join(report.links.get(key, ())),
        warn=len(warnings),
        bar=pool.gpu_count / largest if largest else 0.0,
    )


def picture(report: Report) -> Picture:
    """Lay out the estate: Slurm lane, Kubernetes lane, teams band."""
    estate = report.estate
    pic = Picture()
    facts = {f.pool.name: f for f in report.pools}
    largest = max((p.gpu_count for p in estate.node_pools), default=0)
    parts = estate.slurm.partitions
    slurm_pools = estate.slurm_pools
    clusters = [
        (c, [p for p in estate.kubernetes_pools if p.cluster == c.name], c.queues)
        for c in estate.kubernetes_clusters
    ]
    cluster_widths = [
        _band(max(len(pools), len(q.teams) if q else 0, 1)) + 2 * CLUSTER_PAD
        for _, pools, q in clusters
    ]
    slurm_w = _band(max(len(parts), len(slurm_pools), 1))
    kube_w = sum(cluster_widths) + GAP * max(len(clusters) - 1, 0)
    inner = max(slurm_w, kube_w, 860)
    pic.width = inner + 2 * MARGIN
    y = MARGIN

    if slurm_pools:
        top = y
        y += LANE_TITLE_H
        if parts:
            for part, x in zip(parts, _row_x(len(parts), MARGIN, inner), strict=True):
                teams = ", ".join(part.teams) if part.teams else "all teams"
                detail = f"max {part.max_time} · tier {part.priority_tier}"
                if part.qos:
                    detail += f" · qos {part.qos}"
                key = f"partition:{part.name}"
                pic.boxes.append(
                    Box(
                        kind="partition",
                        key=key,
                        name=part.name,
                        x=x,
                        y=y,
                        w=BOX_W,
                        h=PART_H,
                        lines=(
                            (
                                "name",
                                clip(f"partition {part.name}" + (" ★" if part.default else "")),
                            ),
                            ("line", clip(detail, LINE_CHARS)),
                            ("line", clip(f"teams: {teams}", LINE_CHARS)),
                        ),
                        title=f"partition {part.name}\n{detail}\nteams: {teams}\n"
                        f"pools: {', '.join(part.pools)}"
                        + ("\ndefault partition" if part.default else ""),
                        links=" ".join(report.links.get(key, ())),
                    )
                )
            y += PART_H + LINK_H
        positions = {}
        for pool, x in zip(slurm_pools, _row_x(len(slurm_pools), MARGIN, inner), strict=True):
            box = _pool_box(report, facts[pool.name], x, y, largest)
            positions[pool.name] = box
            pic.boxes.append(box)
        for part_box in [b for b in pic.boxes if b.kind == "partition"]:
            part = next(p for p in parts if p.name == part_box.name)
            for name in part.pools:
                if name in positions:
                    pool_box = positions[name]
                    pic.links.append(
                        Link(
                            part_box.key,
                            pool_box.key,
                            _curve(
                                part_box.x + BOX_W / 2,
                                part_box.y + PART_H,
                                pool_box.x + BOX_W / 2,
                                pool_box.y,
                            ),
                        )
                    )
        y += POOL_H + 16
        pic.frames.insert(
            0,
            Frame(
                "lane slurm",
                MARGIN / 2,
                top,
                inner + MARGIN,
                y - top,
                f"Slurm · cluster {estate.slurm.cluster_name} · {estate.versions.slurm.text}",
            ),
        )
        y += 18

    if clusters:
        top = y
        y += LANE_TITLE_H
        x = MARGIN + (inner - kube_w) / 2
        pools_y = y + CLUSTER_PAD + 18
        queues_y = pools_y + POOL_H + LINK_H
        has_queues = any(q for _, _, q in clusters)
        bottom = (queues_y + QUEUE_H if has_queues else pools_y + POOL_H) + CLUSTER_PAD
        for (cluster, pools, queues), width in zip(clusters, cluster_widths, strict=True):
            band = width - 2 * CLUSTER_PAD
            label = f"cluster {cluster.name}"
            if cluster.provider != "on-prem":
                label += f" · {cluster.provider}"
            if queues:
                # Volcano has no cohort: its queues share the whole cluster
                label += " · volcano queues" if queues.volcano else f" · cohort {queues.cohort}"
            pic.frames.append(Frame("cluster", x, y, width, bottom - y, label))
            boxes = {}
            for pool, px in zip(pools, _row_x(len(pools), x + CLUSTER_PAD, band), strict=True):
                box = _pool_box(report, facts[pool.name], px, pools_y, largest)
                boxes[pool.name] = box
                pic.boxes.append(box)
            entries = queues.teams if queues else ()
            for entry, qx in zip(entries, _row_x(len(entries), x + CLUSTER_PAD, band), strict=True):
                key = f"queue:{cluster.name}/{entry.team}"
                heading = (
                    f"Volcano Queue {entry.team}"
                    if queues and queues.volcano
                    else f"ClusterQueue {entry.team} in cohort {queues.cohort if queues else ''}"
                )
                quota = ", ".join(f"{n} {k}" for k, n in entry.quota.items())
                borrow = (
                    "borrows idle quota"
                    if entry.borrowing_limit is None
                    else f"borrows ≤ {entry.borrowing_limit}"
                )
                queue_box = Box(
                    kind="queue",
                    key=key,
                    name=entry.team,
                    side="kubernetes",
                    x=qx,
                    y=queues_y,
                    w=BOX_W,
                    h=QUEUE_H,
                    lines=(
                        ("name", clip(f"queue {entry.team}")),
                        ("line", clip(quota, LINE_CHARS)),
                        ("line", borrow),
                    ),
                    title=f"{heading}\nnominal: {quota}\n{borrow}",
                    links=" ".join(report.links.get(key, ())),
                )
                pic.boxes.append(queue_box)
                for name, pool_box in boxes.items():
                    if key[len("queue:") :] in facts[name].queues:
                        pic.links.append(
                            Link(
                                key,
                                pool_box.key,
                                _curve(
                                    qx + BOX_W / 2,
                                    queues_y,
                                    pool_box.x + BOX_W / 2,
                                    pools_y + POOL_H,
                                ),
                            )
                        )
            x += width + GAP
        y = bottom + 16
        pic.frames.insert(
            0, Frame("lane kubernetes", MARGIN / 2, top, inner + MARGIN, y - top, "Kubernetes")
        )
        y += 18

    pic.teams_y = y
    y += LANE_TITLE_H
    columns = (MARGIN + 10, MARGIN + 190, MARGIN + 290, MARGIN + 470)
    for team in report.teams:
        pic.teams.append(_team_row(report, team, y, columns))
        y += TEAM_ROW_H
    pic.frames.append(
        Frame("lane teams", MARGIN / 2, pic.teams_y, inner + MARGIN, y - pic.teams_y + 8, "Teams")
    )
    pic.height = y + MARGIN
    return pic


def _team_row(report: Report, team: TeamFacts, y: float, columns: tuple[float, ...]) -> TeamRow:
    key = f"team:{team.name}"
    slurm = (
        f"Slurm: {len(team.partitions)} partition(s), {team.slurm_gpus} GPUs"
        if team.partitions
        else "Slurm: no partition"
    )
    return TeamRow(
        key=key,
        links=" ".join(report.links.get(key, ())),
        y=y,
        cells=(
            (columns[0], clip(team.name, 20)),
            (columns[1], f"gid {team.gid}"),
            (columns[2], clip(f"ns {team.namespace}", 22)),
        ),
        share=team.fairshare_share,
        slurm=clip(slurm, 60),
        kube=clip("Kubernetes: " + ("; ".join(team.kubernetes) or "no cluster"), 75),
        share_x=columns[3],
    )
