"""The cheap pre-check on a page's text alone: may it hold a table? (``may_hold_table``)

Parsers ask it before the costly table search (PDF text pages, OCR'd pages, image frames). ``NUM_TOKEN`` is
the number it counts: "1,234", "(12.5)", "$ 3", "45%"; the PDF parser's column test reads the same tokens.
"""
from __future__ import annotations

import re

NUM_TOKEN = re.compile(r"(?<![\w.])\(?[$€£]?\s?\d[\d,]*(?:\.\d+)?\)?%?(?![\w])")


def may_hold_table(text: str, n_paths: int = 0) -> bool:
    """Cheap pre-check on text alone: three or more lines with two or more numbers, or ruling lines."""
    numeric_lines = 0
    for line in text.splitlines():
        if len(NUM_TOKEN.findall(line)) >= 2:
            numeric_lines += 1
            if numeric_lines >= 3:
                return True
    return n_paths >= 4
