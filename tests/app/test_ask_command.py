"""``lexicon ask`` prints each part of an answer once, rendered: the streamed answer is not printed again, the
SQL of a BI answer shows once, and no markup tag reaches the terminal as text."""
from __future__ import annotations

import io

from app_test_helpers import TENANT  # tests/app/app_test_helpers.py


def test_bi_answer_text_and_sql_are_printed_once(sample_service, module_settings, capsys):
    from app.ask_command import ask_command

    code = ask_command(module_settings, "What was revenue in 2024 and 2023?", tenant=TENANT, mode="bi",
                       service=sample_service)
    out = capsys.readouterr().out
    assert code == 0, out
    answer = sample_service.ask(TENANT, "What was revenue in 2024 and 2023?", mode="bi")
    assert answer.sql and answer.answer
    first_line = answer.answer.strip().splitlines()[0]
    assert out.count(first_line) == 1, out  # streamed once, not printed again
    assert out.count("SELECT") == answer.sql.upper().count("SELECT"), out  # the SQL once
    assert "[dim]" not in out and "[/dim]" not in out and "[yellow]" not in out, out
    assert "route bi" in out


def test_print_final_shows_what_the_stream_did_not(capsys):
    from rich.console import Console

    from app.ask_command import print_final

    final = {"answer": "Revenue was 5 [USD m].", "sql": "SELECT revenue FROM t_1 WHERE \"[x]\" = 1",
             "supported": False, "route": "bi", "thread_id": "t", "citations": [
                 {"filename": "[draft] report.pdf", "page": 2, "quote": "[bold]5[/bold]"}]}
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    print_final(console, final, streamed="Revenue was about 4")  # a stream that is not the answer: printed
    out = buf.getvalue()
    assert out.count("Revenue was 5 [USD m].") == 1 and out.count("SELECT revenue") == 1
    assert "SQL: SELECT" in out and "[dim]" not in out
    assert "The documents do not support an answer." in out and "[yellow]" not in out
    assert "[1] [draft] report.pdf, page 2: \u201c[bold]5[/bold]\u201d" in out  # document text kept verbatim
    buf.truncate(0), buf.seek(0)
    print_final(console, {**final, "answer": final["answer"] + "\nSQL: " + final["sql"]},
                streamed=final["answer"] + " SQL: " + final["sql"])
    assert "Revenue was" not in buf.getvalue() and "SELECT" not in buf.getvalue()  # all of it was streamed
