"""The one error the podgrouper raises for a manifest it cannot group."""

from __future__ import annotations


class ManifestError(ValueError):
    """A manifest that cannot be grouped; ``path`` names the offending field.

    ``path`` is relative to the document (``spec.pytorchReplicaSpecs.Worker.replicas``);
    ``document`` is the index of the document in a multi-document submission, when
    there is more than one.
    """

    def __init__(self, path: str, message: str, *, document: int | None = None) -> None:
        self.path = path
        self.message = message
        self.document = document
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path or "<document>"
        if self.document is not None:
            where = f"document {self.document}: {where}"
        return f"{where}: {self.message}"

    def in_document(self, index: int) -> ManifestError:
        """The same error, marked as coming from document ``index`` unless it already names its document
        (an error inside a document another one groups, as a skipped top owner does)."""
        return ManifestError(
            self.path, self.message, document=index if self.document is None else self.document
        )
