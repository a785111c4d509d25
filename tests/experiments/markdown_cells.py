"""The Markdown tables the report tests compare the page with (test_report.py, and
test_report_browser.py in headless Chromium)."""

from __future__ import annotations

import re


def markdown_tables(text: str, marks: str = r"\*\*") -> list[list[list[str]]]:
    """The pipe tables of a Markdown text: rows of cells, without the marks that match the
    regular expression ``marks`` (``**`` by default)."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            if set(line) <= set("|-: "):
                continue
            cells = [re.sub(marks, "", c).strip() for c in line.strip().strip("|").split("|")]
            if current is None:
                current = []
                tables.append(current)
            current.append(cells)
        else:
            current = None
    return tables
