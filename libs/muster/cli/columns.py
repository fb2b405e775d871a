"""Tables that fit the terminal: names cut with an ellipsis, never wrapped onto a second line.

The widths are decided here, not by rich: left to itself rich shrinks every column alike when a
table is too wide, cutting numbers as readily as names.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

ELLIPSIS = "…"


def ellipsize(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: cut, its last cell an ellipsis, when it is longer."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    return set_cell_size(text, width - 1).rstrip() + ELLIPSIS


def fit_widths(
    natural: list[int], minimum: list[int], available: int, wraps: list[bool] | None = None
) -> list[int]:
    """Widths for columns whose content is ``natural`` cells wide, in ``available`` cells in all.

    While they do not fit, the columns whose text ``wraps`` shrink, down to their ``minimum``; then
    the widest column above its minimum gives up a cell, and the next (so long names shrink before
    short ones). A column whose minimum is its natural width never shrinks. When even the minimums do
    not fit, the minimums.
    """
    wraps = wraps or [False] * len(natural)
    widths = list(natural)
    excess = sum(widths) - available
    # Text that wraps loses nothing by shrinking: it gives way before any name is cut.
    for yielding in ([i for i in range(len(widths)) if wraps[i]], range(len(widths))):
        while excess > 0:
            shrinkable = [i for i in yielding if widths[i] > minimum[i]]
            if not shrinkable:
                break
            # On a tie the column further right gives way: the first one names the row.
            widest = max(shrinkable, key=lambda i: (widths[i], i))
            widths[widest] -= 1
            excess -= 1
    return widths


def table_overhead(columns: int) -> int:
    """Cells a table of ``fitted_table``'s style with ``columns`` columns draws besides their content:
    a border at each edge and one between columns, and a space of padding either side of each border
    between columns (none inside the outer borders)."""
    return 2 + (columns - 1) * 3 if columns else 0


@dataclass(frozen=True)
class Column:
    """One column of a fitted table: its header and how it may shrink.

    ``minimum`` None: never shrinks (figures, bars, states). Otherwise it shrinks to that many cells:
    names are then cut with an ellipsis, or, with ``wrap``, the text folds onto more lines."""

    header: str
    minimum: int | None = None
    justify: JustifyMethod = "left"
    wrap: bool = False


Cell = str | Text
"""A plain string is shown as it is, never read as markup."""


def fitted_table(title: str, columns: list[Column], rows: list[list[Cell]], width: int) -> Table:
    """A table of ``rows`` under ``columns``, no wider than ``width`` cells (unless even the columns'
    minimums are wider)."""
    natural = [max([cell_len(c.header), *(_width(row[i]) for row in rows)]) for i, c in enumerate(columns)]
    minimum = [n if c.minimum is None else min(n, c.minimum) for c, n in zip(columns, natural, strict=True)]
    widths = fit_widths(natural, minimum, width - table_overhead(len(columns)), [c.wrap for c in columns])
    table = Table(title=title, title_justify="left", expand=False, pad_edge=False)
    for column, w in zip(columns, widths, strict=True):
        table.add_column(
            ellipsize(column.header, w),
            width=w,
            justify=column.justify,
            no_wrap=not column.wrap,
            overflow="fold" if column.wrap else "ellipsis",
        )
    for row in rows:
        table.add_row(*(_cut(cell, w, c.wrap) for cell, w, c in zip(row, widths, columns, strict=True)))
    return table


def _width(cell: Cell) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def _cut(cell: Cell, width: int, wrap: bool) -> Text:
    """The cell as Text (a name is never read as markup), cut to ``width`` unless it wraps."""
    if isinstance(cell, str):
        return Text(cell if wrap else ellipsize(cell, width))
    if wrap or cell.cell_len <= width:
        return cell
    cut = cell.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut
