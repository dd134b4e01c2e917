"""Tables: aligned text for the terminal, Markdown for docs/benchmarks.md. Cells come formatted; a
table's `align` has an l (left) or an r (right) a column, by default the first column (a label) left
and the others (figures) right."""

from __future__ import annotations


def text_table(header: list[str], rows: list[list[str]], align: str = "") -> str:
    """Columns as wide as their widest cell, two spaces apart."""
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells) -> str:
        return "  ".join(
            f"{cell:<{width}}" if a == "l" else f"{cell:>{width}}"
            for cell, width, a in zip(cells, widths, align, strict=True)
        ).rstrip()

    return "\n".join(line(row) for row in [header, *rows])


def markdown_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table's lines."""
    align = align or "l" + "r" * (len(header) - 1)
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
