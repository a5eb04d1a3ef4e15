"""Word auto-numbering rendered as text, so "14.2" survives even when Word, not the author, typed it.

python-docx returns a numbered paragraph's text without its number. Contracts drafted in Word almost
always number clauses this way, so we replay the list counters: numbering.xml maps a paragraph's
(numId, ilvl) — set directly or through its style — to a level with a start value, a format (decimal,
letters, roman) and a template such as "%1.%2". Bullets render as nothing.
"""
from __future__ import annotations

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _roman(n: int) -> str:
    vals = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
            (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]
    out = ""
    for v, s in vals:
        while n >= v:
            out, n = out + s, n - v
    return out


def _format(n: int, fmt: str) -> str:
    if fmt in ("lowerLetter", "upperLetter"):
        s = ""
        while n > 0:
            n, r = divmod(n - 1, 26)
            s = chr(ord("a") + r) + s
        return s.upper() if fmt == "upperLetter" else s
    if fmt == "lowerRoman":
        return _roman(n)
    if fmt == "upperRoman":
        return _roman(n).upper()
    return str(n)


class NumberingRenderer:
    def __init__(self, document):
        self.levels: dict[str, dict[int, tuple[int, str, str]]] = {}  # numId -> ilvl -> (start, fmt, text)
        self.counters: dict[str, list[int]] = {}
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):
            return
        abstract = {}
        for an in root.iter(W + "abstractNum"):
            lvls = {}
            for lvl in an.iter(W + "lvl"):
                start = lvl.find(W + "start")
                fmt = lvl.find(W + "numFmt")
                text = lvl.find(W + "lvlText")
                lvls[int(lvl.get(W + "ilvl", "0"))] = (
                    int(start.get(W + "val", "1")) if start is not None else 1,
                    fmt.get(W + "val", "decimal") if fmt is not None else "decimal",
                    text.get(W + "val", "") if text is not None else "",
                )
            abstract[an.get(W + "abstractNumId")] = lvls
        for num in root.iter(W + "num"):
            ref = num.find(W + "abstractNumId")
            if ref is not None and ref.get(W + "val") in abstract:
                self.levels[num.get(W + "numId")] = abstract[ref.get(W + "val")]

    @staticmethod
    def _num_pr(paragraph):
        for ppr in (paragraph._p.pPr, getattr(paragraph.style, "element", None)):
            if ppr is None:
                continue
            ppr = ppr if ppr.tag == W + "pPr" else ppr.find(W + "pPr")
            num_pr = ppr.find(W + "numPr") if ppr is not None else None
            if num_pr is not None:
                num_id = num_pr.find(W + "numId")
                ilvl = num_pr.find(W + "ilvl")
                if num_id is not None:
                    return num_id.get(W + "val"), int(ilvl.get(W + "val", "0")) if ilvl is not None else 0
        return None

    def label(self, paragraph) -> str:
        """The rendered number of this paragraph ("14.2", "(a)"), advancing the counters; "" if none."""
        found = self._num_pr(paragraph)
        if not found or found[0] not in self.levels or found[0] == "0":
            return ""
        num_id, ilvl = found
        levels = self.levels[num_id]
        if ilvl not in levels:
            return ""
        counters = self.counters.setdefault(num_id, [0] * 9)
        for deeper in range(ilvl + 1, 9):
            counters[deeper] = 0
        start, fmt, text = levels[ilvl]
        counters[ilvl] = start if counters[ilvl] == 0 else counters[ilvl] + 1
        if fmt in ("bullet", "none"):
            return ""
        for k in range(ilvl + 1):
            lvl = levels.get(k, (1, "decimal", ""))
            value = counters[k] or lvl[0]
            text = text.replace(f"%{k + 1}", _format(value, lvl[1]))
        return text.strip()
