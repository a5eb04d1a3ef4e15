"""A small sample corpus with known facts: an MSA (PDF), an NDA (DOCX), an annual report (PDF) and a
segment-revenue workbook (XLSX with formulas *and* their cached values, as Excel would save them).

``SAMPLE_FACTS`` holds the true figures and clauses so ingest tests and the app's BI/RAG tests compare
answers against them. Amounts in the annual report are in thousands of US dollars, as printed.

The files are byte-for-byte the same on every run (no creation times, document ids or zip timestamps
from the clock), so writing the corpus again changes nothing and re-ingesting it finds every file
``unchanged``; :func:`write_sample_corpus` only writes a file whose bytes differ.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from pathlib import Path

YEARS = (2024, 2023, 2022)  # column order as printed (latest first)
INCOME = {  # USD thousands; costs are printed in parentheses, i.e. stored negative
    "Revenue": {2024: 63918.7, 2023: 55732.4, 2022: 48210.0},
    "Cost of revenue": {2024: -34402.3, 2023: -31877.9, 2022: -29140.2},
    "Operating expenses": {2024: -22118.9, 2023: -21010.6, 2022: -20304.3},
    "Net income (loss)": {2024: 5486.1, 2023: 1912.6, 2022: -1580.2},
}
INCOME["Gross profit"] = {y: round(INCOME["Revenue"][y] + INCOME["Cost of revenue"][y], 1) for y in YEARS}
INCOME["Operating income (loss)"] = {y: round(INCOME["Gross profit"][y] + INCOME["Operating expenses"][y], 1)
                                     for y in YEARS}
INCOME_ROWS = ["Revenue", "Cost of revenue", "Gross profit", "Operating expenses", "Operating income (loss)",
               "Net income (loss)"]
QUARTERS = ["Q1 2024", "Q2 2024", "Q3 2024", "Q4 2024"]
SEGMENTS = {"Software": [9120.5, 9874.2, 10433.8, 11290.1], "Services": [4210.0, 4388.7, 4502.3, 4891.6],
            "Hardware": [1502.4, 1377.9, 1265.0, 1062.2]}

SAMPLE_FACTS: dict = {
    "msa": {
        "filename": "master_services_agreement.pdf",
        "parties": ("Northwind Analytics LLC", "Contoso Holdings Inc."),
        "governing_law": "State of New York", "governing_law_clause": "14.1",
        "liability_cap_usd": 2_000_000, "liability_cap_clause": "9.2",
        "termination_notice_days": 60, "termination_clause": "12.2",
        "change_of_control_clause": "12.4", "change_of_control_notice_days": 90,
        "confidentiality_years": 5, "confidentiality_clause": "11.3",
        "pages": 3,
    },
    "nda": {
        "filename": "mutual_nda.docx", "term_years": 3, "governing_law": "State of Delaware",
        "representatives": {"Jane Park": "General Counsel", "Omar Haddad": "VP Finance"},
    },
    "annual_report": {
        "filename": "annual_report_2024.pdf", "company": "Contoso Holdings Inc.", "unit": "USD thousands",
        "income_statement_page": 2, "income_statement": INCOME, "years": list(YEARS),
    },
    "segments": {
        "filename": "segment_revenue_2024.xlsx", "sheet": "Segment Revenue", "quarters": QUARTERS,
        "revenue": SEGMENTS, "fy_total": {k: round(sum(v), 1) for k, v in SEGMENTS.items()},
        "quarter_total": [round(sum(v[i] for v in SEGMENTS.values()), 1) for i in range(4)],
    },
}

MSA_CLAUSES = [
    ("MASTER SERVICES AGREEMENT", None),
    ("This Master Services Agreement (the \"Agreement\") is entered into on 1 March 2024 between Northwind "
     "Analytics LLC (\"Supplier\") and Contoso Holdings Inc. (\"Customer\").", None),
    ("1. Definitions", None),
    ("1.1 Services. \"Services\" means the data analytics services described in each Statement of Work.", None),
    ("1.2 Fees. \"Fees\" means the amounts payable by Customer under Section 4.", None),
    ("2. Services", None),
    ("2.1 Provision of Services. Supplier shall provide the Services with reasonable skill and care and in "
     "accordance with the service levels in Schedule 2.", None),
    ("4. Fees and Payment", None),
    ("4.1 Invoices. Supplier invoices monthly in arrears; Customer pays each undisputed invoice within thirty "
     "(30) days of receipt.", None),
    ("9. Limitation of Liability", "break"),
    ("9.1 Exclusion. Neither party is liable for any indirect, incidental or consequential damages, including "
     "lost profits, even if advised of their possibility.", None),
    ("9.2 Liability Cap. Each party's total aggregate liability arising out of this Agreement shall not exceed "
     "USD 2,000,000 (two million US dollars). The cap does not apply to breaches of Section 11.", None),
    ("11. Confidentiality", None),
    ("11.1 Obligations. Each party shall keep the other party's Confidential Information secret and use it "
     "only to perform this Agreement.", None),
    ("11.3 Survival. The obligations in this Section 11 survive for five (5) years after termination or "
     "expiry of this Agreement.", None),
    ("12. Term and Termination", "break"),
    ("12.1 Term. This Agreement starts on the Effective Date and continues for three (3) years.", None),
    ("12.2 Termination for Convenience. Either party may terminate this Agreement for convenience by giving "
     "sixty (60) days' prior written notice to the other party.", None),
    ("12.3 Termination for Cause. Either party may terminate immediately if the other party commits a material "
     "breach that is not remedied within thirty (30) days of notice.", None),
    ("12.4 Change of Control. If a party undergoes a change of control, the other party may terminate this "
     "Agreement by giving ninety (90) days' written notice within six months of the change.", None),
    ("14. Governing Law", None),
    ("14.1 Governing Law. This Agreement is governed by the laws of the State of New York, without regard to "
     "its conflict of laws rules.", None),
    ("14.2 Jurisdiction. The courts located in New York County have exclusive jurisdiction over any dispute.",
     None),
]


def _fmt(v: float, dollar: bool = False) -> str:
    s = f"{abs(v):,.1f}"
    s = f"({s})" if v < 0 else s
    return f"$ {s}" if dollar else s


def write_msa_pdf(path: Path) -> Path:
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

    styles = getSampleStyleSheet()
    story = []
    for text, mark in MSA_CLAUSES:
        if mark == "break":
            story.append(PageBreak())
        is_heading = re.fullmatch(r"(\d+\. .*|[A-Z ]+)", text) is not None
        story.append(Paragraph(text, styles["Heading2" if is_heading else "BodyText"]))
        story.append(Spacer(1, 4))
    SimpleDocTemplate(str(path), pagesize=LETTER, title="Master Services Agreement", invariant=1).build(story)
    return path


def write_annual_report_pdf(path: Path) -> Path:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    st = getSampleStyleSheet()
    rev = INCOME["Revenue"]
    growth = (rev[2024] / rev[2023] - 1) * 100
    story = [
        Paragraph("Contoso Holdings Inc. Annual Report 2024", st["Title"]),
        Paragraph("Letter to Shareholders", st["Heading2"]),
        Paragraph(f"Revenue grew {growth:.1f}% to $63.9 million in 2024, driven by our Software segment. We "
                  "returned to profitability in 2023 after a net loss in 2022 and expanded operating margin "
                  "again in 2024.", st["BodyText"]),
        PageBreak(),
        Paragraph("Consolidated Statements of Operations", st["Heading2"]),
        Paragraph("(in thousands of U.S. dollars)", st["BodyText"]),
        Spacer(1, 6),
    ]
    data = [["", *[f"{y}" for y in YEARS]]]
    for i, row in enumerate(INCOME_ROWS):
        data.append([row, *[_fmt(INCOME[row][y], dollar=(i == 0)) for y in YEARS]])
    table = Table(data, colWidths=[200, 90, 90, 90])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("ALIGN", (1, 0), (-1, -1), "RIGHT")]))
    story += [table, Spacer(1, 12),
              Paragraph("Net loss in 2022 reflects restructuring charges.", st["BodyText"]),
              PageBreak(),
              Paragraph("Risk Factors", st["Heading2"]),
              Paragraph("Our results depend on renewals of multi-year software contracts and on the "
                        "availability of cloud capacity from third parties.", st["BodyText"])]
    SimpleDocTemplate(str(path), pagesize=LETTER, title="Annual Report 2024", invariant=1).build(story)
    return path


def write_nda_docx(path: Path) -> Path:
    import docx
    from docx.enum.text import WD_BREAK

    d = docx.Document()
    d.add_heading("Mutual Non-Disclosure Agreement", level=0)
    d.add_paragraph("This Mutual Non-Disclosure Agreement is made between Contoso Holdings Inc. and Fabrikam "
                    "Partners LP to evaluate a possible business relationship.")
    d.add_heading("1. Confidential Information", level=1)
    d.add_paragraph("Confidential Information means all non-public business, financial and technical "
                    "information disclosed by either party, in any form.")
    d.add_heading("2. Obligations", level=1)
    d.add_paragraph("The receiving party shall protect Confidential Information with at least reasonable care "
                    "and disclose it only to the representatives listed in Schedule A.")
    d.add_heading("3. Term", level=1)
    p = d.add_paragraph("This Agreement remains in force for three (3) years from the Effective Date.")
    p.add_run().add_break(WD_BREAK.PAGE)
    d.add_heading("4. Governing Law", level=1)
    d.add_paragraph("This Agreement is governed by the laws of the State of Delaware.")
    d.add_heading("Schedule A - Authorized Representatives", level=1)
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Name", "Title"
    for name, title in SAMPLE_FACTS["nda"]["representatives"].items():
        cells = table.add_row().cells
        cells[0].text, cells[1].text = name, title
    d.save(str(path))
    stable_zip(path)
    return path


def write_segments_xlsx(path: Path) -> Path:
    """Formulas for the FY column and the total row, plus the cached values Excel would have stored."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = SAMPLE_FACTS["segments"]["sheet"]
    ws.append(["Segment (USD thousands)", *QUARTERS, "FY 2024"])
    cached: dict[str, float] = {}
    for r, (name, values) in enumerate(SEGMENTS.items(), start=2):
        ws.append([name, *values, f"=SUM(B{r}:E{r})"])
        cached[f"F{r}"] = round(sum(values), 1)
    total_row = len(SEGMENTS) + 2
    ws.append(["Total", *[f"=SUM({c}2:{c}{total_row - 1})" for c in "BCDEF"]])
    for i, c in enumerate("BCDE"):
        cached[f"{c}{total_row}"] = SAMPLE_FACTS["segments"]["quarter_total"][i]
    cached[f"F{total_row}"] = round(sum(SAMPLE_FACTS["segments"]["fy_total"].values()), 1)
    notes = wb.create_sheet("Notes")
    notes.append(["Segment revenue is unaudited and presented in thousands of US dollars."])
    wb.save(str(path))
    _inject_cached_values(path, "xl/worksheets/sheet1.xml", cached)
    stable_zip(path)
    return path


def _inject_cached_values(path: Path, member: str, cached: dict[str, float]) -> None:
    with zipfile.ZipFile(path) as zin:
        parts = {n: zin.read(n) for n in zin.namelist()}
    xml = parts[member].decode("utf-8")
    for coord, value in cached.items():
        xml = re.sub(rf'(<c r="{coord}"[^>]*>\s*<f>[^<]*</f>)\s*(<v>\s*</v>|<v\s*/>)?', rf"\1<v>{value}</v>", xml)
    parts[member] = xml.encode("utf-8")
    tmp = Path(tempfile.mkstemp(suffix=".xlsx", dir=path.parent)[1])
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in parts.items():
            zout.writestr(name, data)
    shutil.move(str(tmp), str(path))


FIXED_TIME = (2024, 3, 1, 0, 0, 0)
FIXED_ISO = "2024-03-01T00:00:00Z"
_CORE_DATE = re.compile(r"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:(?:created|modified)>)")


def stable_zip(path: Path) -> None:
    """Rewrite an OOXML zip (DOCX/XLSX) with fixed member timestamps and fixed core-property dates."""
    with zipfile.ZipFile(path) as zin:
        parts = [(i.filename, zin.read(i.filename)) for i in zin.infolist()]
    tmp = Path(tempfile.mkstemp(suffix=path.suffix, dir=path.parent)[1])
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in parts:
            if name == "docProps/core.xml":
                data = _CORE_DATE.sub(rf"\g<1>{FIXED_ISO}\g<2>", data.decode("utf-8")).encode("utf-8")
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o600 << 16
            zout.writestr(info, data)
    tmp.chmod(0o644)
    shutil.move(str(tmp), str(path))


WRITERS = {"msa": write_msa_pdf, "nda": write_nda_docx, "annual_report": write_annual_report_pdf,
           "segments": write_segments_xlsx}


def write_sample_corpus(dest: Path) -> list[Path]:
    """The sample files under ``dest``; a file already there with the same bytes is left untouched."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    with tempfile.TemporaryDirectory(dir=dest) as scratch:
        for key, write in WRITERS.items():
            name = SAMPLE_FACTS[key]["filename"]
            fresh, target = write(Path(scratch) / name), dest / name
            if not target.exists() or target.read_bytes() != fresh.read_bytes():
                fresh.replace(target)
            out.append(target)
    return out
