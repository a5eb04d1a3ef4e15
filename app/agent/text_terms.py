"""The terms of a question and of a sentence as they are compared: content-word stems with British spellings
and a few synonyms folded ("realised" ~ "realized", "acquired" ~ "acquisitions"), and the filler words a
question wraps around what it asks ("major", "onward", "in USD million"), which no sentence must carry."""
from __future__ import annotations

import re

from app.agent.text import content_words

# words a question wraps around what it asks ("major acquisitions", "as of ... onward", "in USD million"): not
# terms a sentence must carry
FILLER = {"onward", "onwards", "historically", "currently", "roughly", "approximately", "major", "key", "main",
          "done", "formerly", "nature", "purpose", "million", "millions", "billion", "billions",
          "thousand", "thousands", "usd", "dollars", "close", "end", "any"}
SPELLING = re.compile(r"(?<=[a-z]{3})is(e|ed|es|ing|ation|ations)\b")
SYNONYMS = {"acquir": "acquis", "divest": "dispos"}  # stems that name the same thing


def key_words(text: str) -> set[str]:
    """Content-word stems with British spellings and a few synonyms folded ("realised" ~ "realized",
    "acquired" ~ "acquisitions"): what a question's terms and a sentence's words are compared as."""
    t = SPELLING.sub(r"iz\1", text.lower())
    return {SYNONYMS.get(w, w) for w in content_words(t)}
