"""Refusals of an import: one line naming the file, the node, its op and why (exit 2)."""

from __future__ import annotations

from refcompiler.errors import MalformedInput
from refcompiler.limits import printable

__all__ = ["Refused", "refused", "node_where"]


class Refused(Exception):
    """Raised inside the importer where the file name is not known; the importer
    turns it into ``MalformedInput`` with ``refused``."""

    def __init__(self, where: str, why: str):
        self.where = where
        self.why = why
        super().__init__(f"{where}: {why}")


def refused(path: str, e: Refused) -> MalformedInput:
    """The refusal as a one-line error; a name from the model (a node's, an
    input's) with control characters is shown escaped, never printed raw."""
    return MalformedInput(printable(e.why), path=path, field=printable(e.where))


def node_where(name: str, op_type: str, index: int) -> str:
    """How a refusal names an ONNX node: its name when it has one, else its position."""
    return f"node '{name}' ({op_type})" if name else f"node #{index} ({op_type})"
