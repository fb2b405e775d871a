"""Argo Workflow: KAI skips the Workflow and groups what it owns.

Each pod the workflow runs (a ``container``, ``script`` or ``containerSet``
template, once per invocation from the entrypoint's steps and DAG tasks) is owned
directly by the Workflow, so it is grouped as a bare pod: its own group of min 1,
named ``<workflow>-<step path>``, with the Workflow's labels under its own. A
``resource`` template runs an executor pod (grouped the same way) and creates its
manifest; with ``setOwnerReference: true`` that object is grouped by its own kind
with the Workflow's labels merged in, without it as a top owner of its own.

Loops: ``withItems`` and ``withSequence`` expand; ``withParam`` is only known at
run time and counts once. A template reached again while it is being expanded
(recursion) is not expanded again. A workflow expanding to more than
``limits.MAX_PODS`` steps, or whose templates call each other more than
``limits.MAX_DEPTH`` deep, is refused. ``templateRef`` and ``workflowTemplateRef``
resolve against WorkflowTemplate / ClusterWorkflowTemplate documents submitted
in the same batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from muster.grouping import controller_labels
from muster.grouping.dra_claims import refuse_container_claims
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_bool, get_int, get_list, get_map, get_str, join, string_map
from muster.grouping.limits import MAX_DEPTH, MAX_PODS
from muster.grouping.model import Context, Draft, Meta, PodTemplate
from muster.grouping.nesting import load_yaml_documents
from muster.grouping.podspec import combine_requests, placement_constraints, pod_spec_from_totals
from muster.grouping.secret_env import secret_env
from muster.names import subdomain

TEMPLATE_KINDS = ("WorkflowTemplate", "ClusterWorkflowTemplate")
STEP = subdomain("step")


@dataclass
class _Walk:
    workflow: Meta
    spec: dict[str, Any]
    spath: str
    ctx: Context
    templates: dict[str, tuple[dict[str, Any], str]]
    controller: dict[str, str]
    """The labels Argo gives every pod of the workflow, under the pod's own."""
    drafts: list[Draft] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)
    steps: int = 0

    def unique(self, name: str) -> str:
        seen = self.names.get(name, 0)
        self.names[name] = seen + 1
        return name if seen == 0 else f"{name}-{seen}"


def _template_index(templates: list[Any], tpath: str) -> dict[str, tuple[dict[str, Any], str]]:
    out = {}
    for i, raw in enumerate(templates):
        path = join(tpath, i)
        template = as_map(raw, path)
        name = get_str(template, "name", path)
        if name:
            out[name] = (template, path)
    return out


def _loop_count(step: dict[str, Any], path: str) -> int:
    if step.get("withItems") is not None:
        return len(get_list(step, "withItems", path))
    if step.get("withSequence") is not None:
        spath = join(path, "withSequence")
        seq = as_map(step["withSequence"], spath)
        if seq.get("count") is not None:
            return max(0, get_int(seq, "count", spath) or 0)
        start, end = get_int(seq, "start", spath, 0), get_int(seq, "end", spath, 0)
        return abs((end or 0) - (start or 0)) + 1
    return 1


def _resolve(walk: _Walk, step: dict[str, Any], path: str) -> tuple[dict[str, Any], str] | None:
    if step.get("inline") is not None:
        return as_map(step["inline"], join(path, "inline")), join(path, "inline")
    if step.get("templateRef") is not None:
        rpath = join(path, "templateRef")
        ref = as_map(step["templateRef"], rpath)
        owner = get_str(ref, "name", rpath) or ""
        found = walk.ctx.batch.find(TEMPLATE_KINDS, owner)
        if found is None:
            raise ManifestError(
                join(rpath, "name"), f"WorkflowTemplate {owner!r} was not submitted with the workflow"
            )
        index, doc = found
        templates = _template_index(
            get_list(doc.get("spec") or {}, "templates", "spec"), f"[{index}].spec.templates"
        )
        wanted = get_str(ref, "template", rpath) or ""
        if wanted not in templates:
            raise ManifestError(
                join(rpath, "template"), f"WorkflowTemplate {owner!r} has no template {wanted!r}"
            )
        return templates[wanted]
    name = get_str(step, "template", path)
    if name is None:
        return None
    if name not in walk.templates:
        raise ManifestError(join(path, "template"), f"no template named {name!r}")
    return walk.templates[name]


def _expand(walk: _Walk, template: dict[str, Any], tpath: str, prefix: str, stack: tuple[int, ...]) -> None:
    if id(template) in stack:
        return
    if len(stack) >= MAX_DEPTH:
        raise ManifestError(tpath, f"templates call templates more than {MAX_DEPTH} deep")
    stack = (*stack, id(template))
    calls: list[tuple[dict[str, Any], str]] = []
    for i, group in enumerate(get_list(template, "steps", tpath)):
        gpath = join(join(tpath, "steps"), i)
        if isinstance(group, dict):  # a single step instead of a parallel group
            group = [group]
        if not isinstance(group, list):
            raise ManifestError(gpath, "expected a list of steps")
        calls += [(as_map(step, join(gpath, j)), join(gpath, j)) for j, step in enumerate(group)]
    dpath = join(tpath, "dag")
    dag = get_map(template, "dag", tpath)
    calls += [
        (as_map(task, join(join(dpath, "tasks"), i)), join(join(dpath, "tasks"), i))
        for i, task in enumerate(get_list(dag, "tasks", dpath))
    ]
    for step, path in calls:
        resolved = _resolve(walk, step, path)
        if resolved is None:
            continue
        # Argo names a step's pod from hashes; here the step's name is part of its group's, so it
        # must fit a job name: Argo's step names are letters, digits and '-', read in lower case.
        name = (get_str(step, "name", path) or "step").lower()
        if (why := STEP.refusal(name)) is not None:
            raise ManifestError(join(path, "name"), why)
        count = _loop_count(step, path)
        for k in range(count):
            walk.steps += 1
            if walk.steps > MAX_PODS:
                raise ManifestError(path, f"the workflow expands to more than {MAX_PODS} steps")
            step_prefix = f"{prefix}-{name}" if count == 1 else f"{prefix}-{name}-{k}"
            _expand(walk, resolved[0], resolved[1], step_prefix, stack)
    _pods_of(walk, template, tpath, prefix)


def _pod(walk: _Walk, template: dict[str, Any], tpath: str, containers, role: str) -> PodTemplate:
    mpath = join(tpath, "metadata")
    meta = get_map(template, "metadata", tpath)
    pod_meta = get_map(walk.spec, "podMetadata", walk.spath)
    ppath = join(walk.spath, "podMetadata")
    labels = {**string_map(pod_meta, "labels", ppath), **string_map(meta, "labels", mpath)}
    annotations = {**string_map(pod_meta, "annotations", ppath), **string_map(meta, "annotations", mpath)}
    init = [
        (as_map(c, join(join(tpath, "initContainers"), i)), join(join(tpath, "initContainers"), i))
        for i, c in enumerate(get_list(template, "initContainers", tpath))
    ]
    selector = {
        **string_map(walk.spec, "nodeSelector", walk.spath),
        **string_map(template, "nodeSelector", tpath),
    }
    # Argo gives the pod the template's tolerations, and its affinity, where the template has them; else
    # the workflow's.
    refuse_container_claims([*init, *containers], "an Argo template gives its pod no resourceClaims")
    own = placement_constraints(template, tpath)
    workflow = placement_constraints(walk.spec, walk.spath)
    pod = pod_spec_from_totals(
        combine_requests(containers, init),
        annotations,
        selector,
        role=role,
        count=1,
        meta_path=mpath,
        constraints=(own if template.get("affinity") is not None else workflow)._replace(
            tolerations=own.tolerations if template.get("tolerations") else workflow.tolerations
        ),
        labels={**walk.controller, **labels},
        secret_env=secret_env([*init, *containers]),
        spec_path=tpath,
    )
    priority = get_str(template, "priorityClassName", tpath) or get_str(
        walk.spec, "podPriorityClassName", walk.spath
    )
    image = any(bool(c.get("image")) for c, _ in [*containers, *init])
    return PodTemplate(
        pod=pod, labels=labels, annotations=annotations, priority_class_name=priority, image=image
    )


def _add_pod(walk: _Walk, template: PodTemplate, prefix: str) -> None:
    top = Meta(
        api_version="v1",
        kind="Pod",
        name=walk.unique(walk.workflow.name + prefix),
        labels=template.labels,
        annotations=template.annotations,
    ).merged(walk.workflow.labels, walk.workflow.annotations)
    walk.drafts.append(
        Draft(name=top.name, kind="Workflow", top=top, owners=(top,), pods=(template,), min_available=1)
    )


def _pods_of(walk: _Walk, template: dict[str, Any], tpath: str, prefix: str) -> None:
    for key in ("container", "script"):
        if template.get(key) is not None:
            cpath = join(tpath, key)
            _add_pod(
                walk, _pod(walk, template, tpath, [(as_map(template[key], cpath), cpath)], "pod"), prefix
            )
            return
    if template.get("containerSet") is not None:
        spath = join(tpath, "containerSet")
        cset = as_map(template["containerSet"], spath)
        containers = [
            (as_map(c, join(join(spath, "containers"), i)), join(join(spath, "containers"), i))
            for i, c in enumerate(get_list(cset, "containers", spath))
        ]
        _add_pod(walk, _pod(walk, template, tpath, containers, "pod"), prefix)
        return
    if template.get("resource") is not None:
        rpath = join(tpath, "resource")
        resource = as_map(template["resource"], rpath)
        # The executor pod that runs `argoexec resource`; its resources are the controller's to set.
        _add_pod(walk, _pod(walk, template, tpath, [({"name": "main"}, rpath)], "executor"), prefix)
        if (get_str(resource, "action", rpath) or "") not in ("create", "apply"):
            return
        mpath = join(rpath, "manifest")
        text = get_str(resource, "manifest", rpath)
        if not text:
            raise ManifestError(mpath, "required for action create/apply")
        obj = _manifest(text, mpath)
        inherited = walk.workflow if get_bool(resource, "setOwnerReference", rpath) else None
        walk.drafts += walk.ctx.group_object(as_map(obj, mpath), mpath, inherited=inherited)


def _manifest(text: str, mpath: str) -> Any:
    """The one document of a resource template's ``manifest``, errors inside it named below ``mpath``."""
    try:
        docs = load_yaml_documents(text)
    except yaml.YAMLError as exc:
        raise ManifestError(mpath, f"not valid YAML: {exc}") from exc
    except ManifestError as exc:
        inner = exc.path if exc.path.startswith("[") or not exc.path else f".{exc.path}"
        raise ManifestError(mpath + inner, exc.message) from None
    if len(docs) != 1:
        raise ManifestError(mpath, f"expected one document, got {len(docs)}")
    return docs[0]


def group_workflow(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    return workflow_drafts(as_map(obj.get("spec"), spath), spath, meta, ctx)


def workflow_drafts(
    spec: dict[str, Any], spath: str, meta: Meta, ctx: Context, *, scheduled: bool = False
) -> list[Draft]:
    """The groups of a workflow spec at ``spath`` (a Workflow's, or the one a CronWorkflow creates)."""
    templates = _template_index(get_list(spec, "templates", spath), join(spath, "templates"))
    entry = get_str(spec, "entrypoint", spath)
    if spec.get("workflowTemplateRef") is not None:
        rpath = join(spath, "workflowTemplateRef")
        owner = get_str(as_map(spec["workflowTemplateRef"], rpath), "name", rpath) or ""
        found = ctx.batch.find(TEMPLATE_KINDS, owner)
        if found is None:
            raise ManifestError(
                join(rpath, "name"), f"WorkflowTemplate {owner!r} was not submitted with the workflow"
            )
        index, doc = found
        tspec = as_map(doc.get("spec"), f"[{index}].spec")
        templates = {
            **_template_index(get_list(tspec, "templates", "spec"), f"[{index}].spec.templates"),
            **templates,
        }
        entry = entry or get_str(tspec, "entrypoint", "spec")
    if not entry:
        raise ManifestError(join(spath, "entrypoint"), "required field is missing")
    if entry not in templates:
        raise ManifestError(join(spath, "entrypoint"), f"no template named {entry!r}")
    # A CronWorkflow's runs are named when they start: only a Workflow's own name is known.
    controller = controller_labels.synthesised("CronWorkflow" if scheduled else "Workflow", name=meta.name)
    walk = _Walk(workflow=meta, spec=spec, spath=spath, ctx=ctx, templates=templates, controller=controller)
    template, tpath = templates[entry]
    _expand(walk, template, tpath, "", ())
    return walk.drafts
