"""Plotly figures for BI answers: the agent's own chart, or a bar / line / table built from the SQL result."""
from __future__ import annotations

import re
from typing import Any, Sequence

import plotly.graph_objects as go

CHART_KINDS = ("auto", "bar", "line", "table")
# a column named for a period, as the ingested statements name them: 2024, y2024, fy2024, q3_2024
PERIOD_COLUMN = re.compile(r"^(?:y|fy_?|q[1-4]_?)?((?:19|20)\d\d)$", re.I)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def axis_label(value: Any) -> str:
    """A category label; whole floats (years stored as REAL) print without ".0"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def numeric_columns(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[int]:
    """Indexes of columns whose non-null values are all numbers (and at least one is present)."""
    found = []
    for i, _ in enumerate(columns):
        values = [r[i] for r in rows if i < len(r) and r[i] is not None]
        if values and all(_is_number(v) for v in values):
            found.append(i)
    return found


def table_figure(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> go.Figure:
    cells = [[r[i] if i < len(r) else None for r in rows] for i in range(len(columns))]
    fig = go.Figure(go.Table(header={"values": list(columns)}, cells={"values": cells}))
    fig.update_layout(title=title or None, margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10})
    return fig


def result_figure(columns: Sequence[str], rows: Sequence[Sequence[Any]], kind: str, title: str = "") -> go.Figure:
    """A bar or line chart with the first non-numeric column on x and every numeric column as a series.

    Falls back to a table when there is nothing numeric to plot (or ``kind == "table"``).
    """
    if kind not in CHART_KINDS:
        raise ValueError(f"unknown chart kind {kind!r}; expected one of {', '.join(CHART_KINDS)}")
    if not columns:
        raise ValueError("the query returned no columns to chart")
    numeric = numeric_columns(columns, rows)
    if kind == "table" or not numeric or not rows:
        return table_figure(columns, rows, title)
    labels = [i for i in range(len(columns)) if i not in numeric]
    periods = period_columns(columns, numeric)
    if labels and len(periods) > 1:  # other numeric columns (a growth %) are not periods: left out
        return _periods_figure(columns, rows, kind, labels, periods, title)
    if labels:
        x = [" / ".join(axis_label(r[i]) for i in labels) for r in rows]
        x_title = " / ".join(columns[i] for i in labels)
        series = numeric
    elif len(numeric) > 1:  # all numeric: the first column is the axis (a year, a period number)
        x, x_title, series = [axis_label(r[numeric[0]]) for r in rows], columns[numeric[0]], numeric[1:]
    else:
        x, x_title, series = [str(i) for i in range(1, len(rows) + 1)], "row", numeric
    fig = go.Figure()
    for i in series:
        y = [r[i] for r in rows]
        if kind == "line":
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=columns[i]))
        else:
            fig.add_trace(go.Bar(x=x, y=y, name=columns[i]))
    fig.update_layout(
        title=title or None,
        xaxis_title=x_title,
        yaxis_title=columns[series[0]] if len(series) == 1 else None,
        barmode="group",
        xaxis_type="category",  # years and periods are labels, not a continuous scale
        margin={"l": 40, "r": 10, "t": 40 if title else 10, "b": 40},
    )
    return chronological(fig)


def period_key(column: str) -> tuple[int, int]:
    """Chronological order: year, then Q1..Q4, then the full (fiscal) year."""
    low, year = column.lower(), int(PERIOD_COLUMN.match(column).group(1))
    return year, int(low[1]) if low.startswith("q") else 5


def period_columns(columns: Sequence[str], numeric: Sequence[int]) -> list[int]:
    """The numeric columns named for periods, oldest first (statements list the newest year first)."""
    found = [i for i in numeric if PERIOD_COLUMN.match(columns[i])]
    return sorted(found, key=lambda i: period_key(columns[i]))


def period_label(column: str) -> str:
    """``y2024`` -> ``2024``, ``fy2024`` -> ``FY 2024``, ``q3_2024`` -> ``Q3 2024``."""
    low = column.lower()
    year = PERIOD_COLUMN.match(column).group(1)
    if low.startswith("fy"):
        return f"FY {year}"
    if low.startswith("q"):
        return f"Q{low[1]} {year}"
    return year


def _periods_figure(columns, rows, kind, labels, periods, title) -> go.Figure:
    """A wide statement (line items x period columns): periods on x, one series per line item."""
    x = [period_label(columns[i]) for i in periods]
    fig = go.Figure()
    for r in rows:
        name = " / ".join(axis_label(r[i]) for i in labels)
        y = [r[i] for i in periods]
        if kind == "line":
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=name))
        else:
            fig.add_trace(go.Bar(x=x, y=y, name=name))
    fig.update_layout(title=title or None, xaxis_title="period", xaxis_type="category", barmode="group",
                      showlegend=True, margin={"l": 40, "r": 10, "t": 40 if title else 10, "b": 40})
    return fig


PERIOD_LABEL = re.compile(r"^(?:(FY) ?|(Q[1-4]) ?)?((?:19|20)\d\d)(?:\.0)?$", re.I)


def _label_key(label) -> tuple[int, int] | None:
    m = PERIOD_LABEL.match(str(label).strip())
    if not m:
        return None
    return int(m.group(3)), int(m.group(2)[1]) if m.group(2) else 5


def chronological(fig: go.Figure) -> go.Figure:
    """Traces whose x values are all periods (2022, FY 2024, Q3 2024) run oldest first."""
    for trace in fig.data:
        x, y = getattr(trace, "x", None), getattr(trace, "y", None)
        if x is None or y is None or len(x) != len(y) or len(x) < 2:
            continue
        keys = [_label_key(v) for v in x]
        if all(k is not None for k in keys) and keys != sorted(keys):
            order = sorted(range(len(x)), key=lambda i: keys[i])
            trace.x, trace.y = [x[i] for i in order], [y[i] for i in order]
    return fig


def answer_figure(answer: dict, kind: str = "auto") -> go.Figure | None:
    fig = _answer_figure(answer, kind)
    return chronological(fig) if fig is not None else None


def _answer_figure(answer: dict, kind: str = "auto") -> go.Figure | None:
    """The figure to show for an answer: the agent's chart for ``auto``, else one built from its rows."""
    columns, rows = answer.get("columns") or [], answer.get("rows") or []
    if kind == "auto":
        numeric = numeric_columns(columns, rows) if rows else []
        if len(period_columns(columns, numeric)) > 1 and len(numeric) < len(columns):
            return result_figure(columns, rows, "bar")  # a statement: periods in order, line items named
        if answer.get("chart"):
            return go.Figure(answer["chart"])
        if not columns:
            return None
        kind = "bar"
    if not columns:
        return None
    return result_figure(columns, rows, kind)
