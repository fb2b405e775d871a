"""Dynamo ``DynamoGraphDeployment``: KAI skips it and groups what it owns (skip-top-owner).

The Dynamo operator turns a graph into a Grove PodCliqueSet (or, without Grove,
Deployments and LeaderWorkerSets) owned by the graph; KAI groups that object by its
own kind, with the graph's labels and annotations merged under its own. muster does
not reimplement the Dynamo operator, so the objects it makes must come in the same
submission, each with an ``ownerReference`` naming the graph; a graph submitted alone
is refused, saying so. Every API version is registered (KAI v0.17; ``v1alpha1`` only
before), as Dynamo 1.2 serves ``v1beta1``.
"""

from __future__ import annotations

from typing import Any

from muster.grouping.errors import ManifestError
from muster.grouping.model import Batch, Context, Draft, Meta

API_GROUP = "nvidia.com"
KIND = "DynamoGraphDeployment"


def _owned_by(batch: Batch, name: str) -> list[tuple[int, dict[str, Any]]]:
    """The documents whose first ownerReference names the graph ``name`` (KAI follows the first only)."""
    found = []
    for i, doc in enumerate(batch.docs):
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
        first = refs[0] if isinstance(refs, list) and refs else None
        if isinstance(first, dict) and first.get("kind") == KIND and first.get("name") == name:
            found.append((i, doc))
    return found


def group_dynamo_graph(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    owned = _owned_by(ctx.batch, meta.name)
    if not owned:
        raise ManifestError(
            path,
            f"muster does not derive the objects the Dynamo operator makes from a {KIND}: submit them "
            f"with it (a Grove PodCliqueSet), each with an ownerReference naming {meta.name!r}",
        )
    drafts: list[Draft] = []
    for index, doc in owned:
        try:
            drafts += ctx.group_object(doc, "", inherited=meta)
        except ManifestError as exc:
            raise exc.in_document(index) from None
    return drafts
