from app.agent.grounding import clean_answer, grounded, ungrounded_figures

CLAUSE = {"doc_id": "d1", "filename": "msa.pdf", "page": 3, "section": "12.2",
          "quote": "Either party may terminate this Agreement for convenience on sixty (60) days' written notice."}


def test_a_figure_the_source_does_not_say_is_replaced_by_the_quote():
    answer, kept = grounded("The notice period is thirty (30) days.", [CLAUSE])
    assert not kept
    assert CLAUSE["quote"] in answer and "msa.pdf, p. 3" in answer and "30" not in answer


def test_a_grounded_answer_is_kept():
    answer, kept = grounded("Either party may terminate on sixty (60) days' written notice.", [CLAUSE])
    assert kept and answer.startswith("Either party")


def test_figures_compare_without_separators():
    quote = "liability shall not exceed USD 2,000,000 (two million US dollars)"
    assert ungrounded_figures("The cap is USD 2000000.", [quote]) == []
    assert ungrounded_figures("The cap is USD 5,000,000.", [quote]) == ["5,000,000"]


def test_echoed_fence_markers_are_removed():
    assert clean_answer("The law of New York applies. DOCUMENT>>>") == "The law of New York applies."
