"""``muster report``: what a log says about waits, fair share and lost work.

``fold`` reads events into a ``Report`` (``model``), with the per-moment share arithmetic in
``shares`` and the summaries in ``stats``; ``text`` and ``plots`` render it; ``simulated`` runs a
scenario whose log carries what the live allocator publishes about queues. See docs/report.md.
"""

from muster.report.fold import build_report
from muster.report.model import Report

__all__ = ["Report", "build_report"]
