"""Bad manifests: an error naming the field path, and no groups."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests

from .support import group_yaml


def path_of(text: str) -> str:
    with pytest.raises(ManifestError) as err:
        group_yaml(text)
    return err.value.path


def test_a_manifest_without_kind_names_kind():
    assert path_of("apiVersion: v1\nmetadata: {name: x}") == "kind"


def test_a_manifest_without_api_version_names_it():
    assert path_of("kind: Pod\nmetadata: {name: x}") == "apiVersion"


def test_a_wrongly_typed_field_names_its_path():
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: three, template: {spec: {containers: [{name: c}]}}}"
    assert path_of(text) == "spec.replicas"


def test_negative_replicas_are_rejected():
    text = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec: {pytorchReplicaSpecs: {Worker: {replicas: -1, template: {spec: {containers: [{name: c}]}}}}}
"""
    assert path_of(text) == "spec.pytorchReplicaSpecs.Worker.replicas"


def test_negative_deployment_replicas_are_rejected():
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: -2, template: {spec: {containers: [{name: c}]}}}"
    assert path_of(text) == "spec.replicas"


def test_an_unparsable_quantity_names_its_path():
    text = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: r}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: h, resources: {limits: {cpu: one}}}]}}}
"""
    assert path_of(text) == "spec.headGroupSpec.template.spec.containers[0].resources.limits.cpu"


def test_a_label_that_is_not_a_string_names_it():
    assert (
        path_of(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {n: 3}}\nspec: {containers: [{name: c}]}"
        )
        == "metadata.labels.n"
    )


def test_a_missing_pod_template_names_it():
    assert path_of("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {}") == "spec.template"


def test_errors_in_a_multi_document_submission_name_the_document():
    with pytest.raises(ManifestError) as err:
        group_yaml(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nmetadata: {name: y}"
        )
    assert (err.value.document, err.value.path) == (1, "kind")
    assert str(err.value).startswith("document 1: kind:")


def test_a_document_that_is_not_a_mapping_is_rejected():
    with pytest.raises(ManifestError, match="expected a mapping"):
        group_manifests(["just a string"])  # type: ignore[list-item]


def test_a_submission_of_context_documents_only_is_rejected():
    with pytest.raises(ManifestError, match="runs any pod"):
        group_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}")
