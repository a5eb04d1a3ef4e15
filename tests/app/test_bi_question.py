"""Question reading for the BI planner (pure functions): text questions go to RAG, analyst instructions
and definitions are read as the question they ask."""
from __future__ import annotations


def test_text_questions_and_which_years_questions_are_not_figures():
    from app.agent.bi.question import parse_question

    for q in ("What does the recorded investment include?", "What does order intake represent?",
              "In which years was the total equity calculated?", "Which years did deferred tax assets exceed $20,000?"):
        assert parse_question(q).text_intent, q
    for q in ("Which year had the highest operating income?", "What was revenue in 2019?"):
        assert not parse_question(q).text_intent, q


def test_instructions_are_dropped_and_definitions_rewritten():
    from app.agent.bi.instructions import read

    r = read("Considering the data in the balance sheet, what is Block's FY2016 working capital ratio? Define working "
             "capital ratio as total current assets divided by total current liabilities. Round your answer to two "
             "decimal places.")
    assert r.question == "What is the ratio of total current assets to total current liabilities FY2016?"
    assert r.statements == ["balance_sheet"]
    r = read("What is the FY2016 COGS for Microsoft? Please state answer in USD millions. Provide a response to the "
             "question by primarily using the statement of income.")
    assert r.question == "What is the FY2016 COGS for Microsoft?" and r.statements == ["income_statement"]
    r = read("What is Amazon's year-over-year change in revenue from FY2016 to FY2017 (in units of percents and round "
             "to one decimal place)?")
    assert "percentage change in revenue" in r.question and "round" not in r.question
    r = read("What is the gross margin in 2019?")  # a row may be named so: the usual definition only as fallback
    assert r.question == "What is the gross margin in 2019?" and "gross profit to revenue" in r.fallback
    # a lead-in before the colon, and what follows the question, are not the question ("approach" asks no text)
    r = read("We need to calculate a metric. Please answer the following question: what is Acme's year end FY2018 "
             "net property, plant, and equipment? Answer in USD millions.")
    assert r.question == "what is Acme's year end FY2018 net property, plant, and equipment?", r
    r = read("What is the FY2019 - FY2020 total revenue growth rate for Acme (formerly known as Roadrunner)? Approach "
             "the question asked by assuming the standpoint of an investment banker.")
    assert r.question == "What is the FY2019 - FY2020 total revenue growth rate for Acme (formerly known as Roadrunner)?"
    # a sentence the splitter cuts at an abbreviation before the question mark stays whole
    r = read("Which years does the table provide information for the reconciliation from U.S. GAAP Operating income?")
    assert r.question.startswith("Which years does the table"), r
    r = read("Does Acme have positive working capital? If working capital is not a useful metric for a company like "
             "this, then please state that and explain why.")
    assert r.conditional.startswith("If working capital is not a useful metric") and "useful" not in r.question


def test_the_operations_a_question_asks_and_what_a_program_leaves_undone():
    from app.agent.bi.question import operation_unmet, operations_asked

    assert operations_asked("What is the change in the average total current tax expense?") == {"average", "change"}
    assert operation_unmet("What is the change in the average total current tax expense?", "average") == {"change"}
    assert operation_unmet("What is the change (%) for order intake between 2018 and 2019?", "difference") == {"percent"}
    assert operation_unmet("What is the change (%) for order intake between 2018 and 2019?", "pct_change") == set()
    assert operation_unmet("What are the values of raw materials in 2018 and 2019 respectively?", "sum") == {"list"}
    assert operation_unmet("What are the values of raw materials in 2018 and 2019 respectively?", "lookup") == set()
    # words that name a line item are not operations
    assert operation_unmet("What was the change in Total operating income in 2019 from 2018?", "difference") == set()
    assert operation_unmet("In which year was the net debt to EBITDA ratio larger?", "max") == set()
    assert operation_unmet("What was the increase in the weighted average shares outstanding?", "difference") == set()
    assert operation_unmet("What percentage of revenue was services in 2019?", "ratio") == set()
    assert operation_unmet("What is the average of X?", "metric") == set()  # a formula: not judged here
    # a superlative asks for the extreme item, which a lookup of one row does not find
    assert operation_unmet("What was the largest liability in the balance sheet in 2022?", "lookup") == {"extreme"}
    assert operation_unmet("Which segment had the lowest net revenue in 2021?", "min") == set()
