"""Whether a set of queues is consistent: pure checks, every error naming queue and field.

Checked: duplicate names, a parent that is not among the queues, parent
cycles, negative quotas and limits other than -1, negative weights, a limit
below the quota. (Which queues may hold jobs is not checked here.)
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.events import QueueSpec


@dataclass(frozen=True, order=True)
class QueueError:
    queue: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"queue {self.queue}: {self.field}: {self.message}"


def _resource_errors(queue: QueueSpec) -> list[QueueError]:
    errors = []
    for name in sorted(queue.resources):
        res = queue.resources[name]
        base = f"resources.{name}"
        for field, value in (("quota", res.quota), ("limit", res.limit)):
            if value < 0 and value != -1:
                errors.append(
                    QueueError(queue.name, f"{base}.{field}", f"must be -1 or at least 0, got {value:g}")
                )
        if res.over_quota_weight < 0:
            errors.append(
                QueueError(
                    queue.name,
                    f"{base}.over_quota_weight",
                    f"must not be negative, got {res.over_quota_weight:g}",
                )
            )
        if res.limit >= 0 and res.quota >= 0 and res.limit < res.quota:
            errors.append(
                QueueError(queue.name, f"{base}.limit", f"limit {res.limit:g} is below quota {res.quota:g}")
            )
    return errors


def validate_queues(queues: list[QueueSpec]) -> list[QueueError]:
    """Every inconsistency in ``queues``, sorted by queue then field; empty when valid."""
    errors: list[QueueError] = []
    by_name: dict[str, QueueSpec] = {}
    for queue in queues:
        if queue.name in by_name:
            errors.append(QueueError(queue.name, "name", "defined more than once"))
        by_name.setdefault(queue.name, queue)
    for queue in queues:
        errors += _resource_errors(queue)
        if queue.parent is not None and queue.parent not in by_name:
            errors.append(QueueError(queue.name, "parent", f"unknown parent queue {queue.parent!r}"))
    for name in sorted(by_name):
        seen = [name]
        current = by_name[name].parent
        while current is not None and current in by_name:
            if current == name:
                errors.append(QueueError(name, "parent", "parent chain loops: " + " -> ".join([*seen, name])))
                break
            if current in seen:
                break  # a loop above this queue; reported for the queues on it
            seen.append(current)
            current = by_name[current].parent
    return sorted(set(errors))
