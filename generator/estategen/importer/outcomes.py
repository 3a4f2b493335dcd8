"""What ``estategen import`` made of each setting (mapped, passed, changed, dropped,
refused), the notes it collects while it runs, and the report it prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from estategen import slurmconf
from estategen.errors import clip
from estategen.slurmconf import Setting, Where

# mapped: the blueprint key keeps it; passed: slurm.options keeps it as written; changed: kept
# in another form that slurmctld reads differently (a host name in lower case); dropped: no
# effect on the target release (a key Slurm removed); refused: not kept
Kind = Literal["mapped", "passed", "changed", "dropped", "refused"]
# the kinds whose settings the render does not give slurmctld as the site did
UNFAITHFUL: tuple[Kind, ...] = ("changed", "refused")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one setting: mapped to ``target``, passed through, or refused."""

    kind: Kind
    where: Where
    key: str
    value: str
    target: str

    def format(self) -> str:
        return f"{self.where}: {self.kind}: {self.key}={clip(self.value)} -> {self.target}"


@dataclass(frozen=True, slots=True)
class Imported:
    text: str
    outcomes: tuple[Outcome, ...]
    reviews: tuple[str, ...]
    inputs: tuple[str, ...] = ()  # every file read (Includes too): never the output
    # what validate still finds in the blueprint written (key path: message), when import
    # could not trace a finding to a site setting it could refuse
    findings: tuple[str, ...] = ()

    @property
    def faithful(self) -> bool:
        """The blueprint validates and its render gives slurmctld every setting as the site
        did: nothing changed or refused."""
        return not self.findings and not any(o.kind in UNFAITHFUL for o in self.outcomes)


@dataclass(slots=True)
class _Run:
    outcomes: list[Outcome] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    _seen: set[Outcome] = field(default_factory=set)
    # what the site's files may still spend: bytes, Includes, settings, host names
    budget: slurmconf.Budget = field(default_factory=slurmconf.Budget)
    # blueprint key path (pools, partitions and teams by name: node_pools[gpu].gpus) -> the
    # site settings that gave it its value, to refuse them if validate refuses the value
    sources: dict[str, dict[Setting, None]] = field(default_factory=dict)

    def source(self, path: str, setting: Setting) -> None:
        self.sources.setdefault(path, {})[setting] = None

    def withdraw(self, setting: Setting) -> None:
        """Take back what was recorded of ``setting`` (it is refused after all); an item of a
        list (``shard:32`` of ``Gres=gpu:a100:4,shard:32``) is its own setting, and its
        siblings keep theirs."""
        mine = (setting.where, setting.key, setting.value)
        for outcome in [o for o in self.outcomes if (o.where, o.key, o.value) == mine]:
            if outcome.kind != "refused":
                self.outcomes.remove(outcome)
                self._seen.discard(outcome)

    def _add(self, outcome: Outcome) -> bool:
        """Record ``outcome`` once (NodeName=DEFAULT values reach every line after them)."""
        if outcome in self._seen:
            return False
        self._seen.add(outcome)
        self.outcomes.append(outcome)
        return True

    def mapped(self, setting: Setting, target: str) -> None:
        self._add(Outcome("mapped", setting.where, setting.key, setting.value, target))

    def unmap(self, setting: Setting, target: str) -> None:
        """Take back a mapping (a later look found the value cannot stay)."""
        outcome = Outcome("mapped", setting.where, setting.key, setting.value, target)
        self.outcomes.remove(outcome)
        self._seen.discard(outcome)

    def passed(self, setting: Setting, target: str) -> None:
        self._add(Outcome("passed", setting.where, setting.key, setting.value, target))

    def refused(self, setting: Setting, reason: str, context: str = "") -> None:
        self._note("refused", setting, reason, context)

    def changed(self, setting: Setting, how: str, context: str = "") -> None:
        """Kept in another form than the site's, which slurmctld reads differently."""
        self._note("changed", setting, how, context)

    def dropped(self, setting: Setting, why: str) -> None:
        """Left out because it has no effect on the release the blueprint targets."""
        self._note("dropped", setting, why)

    def _note(self, kind: Kind, setting: Setting, reason: str, context: str = "") -> None:
        if self._add(Outcome(kind, setting.where, setting.key, setting.value, reason)):
            what = f"{context} " if context else ""
            label = "" if kind == "refused" else f"{kind}: "
            self.comments.append(
                f"{setting.where}: {what}{setting.key}={setting.value}  # {label}{reason}"
            )


def summary(imported: Imported) -> str:
    """The report ``estategen import`` prints: each setting's fate with its source line."""
    lines = [o.format() for o in sorted(imported.outcomes, key=lambda o: (o.where, o.key))]
    counts = {
        kind: sum(o.kind == kind for o in imported.outcomes)
        for kind in ("mapped", "passed", "changed", "dropped", "refused")
    }
    lines.append(
        f"{counts['mapped']} mapped, {counts['passed']} passed through, {counts['changed']} "
        f"changed, {counts['dropped']} dropped, {counts['refused']} refused"
    )
    lines += [f"review: {note}" for note in imported.reviews]
    return "\n".join(lines) + "\n"


def unfaithful(imported: Imported) -> str:
    """Why the render of ``imported`` is not the site, in one line (for a blueprint that is
    not :attr:`Imported.faithful`)."""
    counts = {kind: sum(o.kind == kind for o in imported.outcomes) for kind in UNFAITHFUL}
    parts = [f"{n} {kind}" for kind, n in counts.items() if n]
    if imported.findings:
        parts.append(f"{len(imported.findings)} findings validate still refuses")
    return (
        "but its render would not be the site's: "
        + ", ".join(parts)
        + " (listed at the end of the blueprint)"
    )
