"""A curated lexicon of contract clause types: how a question asks for one, how contracts word it, which
headings carry it, and what a passage must contain to answer it.

General legal vocabulary (the wordings any commercial contract uses), not tuned to single documents.
``detect(question)`` names the clause type a question asks about; ``ClauseType.text_score`` rates how
strongly a passage reads like that clause; ``ClauseType.slot`` is the thing an answering span must state
(checked by ``app.agent.verify``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


def flat(text: str) -> str:
    """Whitespace folded to single spaces (PDF text has line breaks and no-break spaces mid-phrase)."""
    return re.sub(r"\s+", " ", text)


@dataclass(frozen=True)
class ClauseType:
    name: str
    ask: tuple[str, ...]  # regexes over the question (lower case) that mean this clause type
    wordings: tuple[str, ...]  # regexes over passage text (lower case): how contracts say it
    headings: tuple[str, ...]  # words of section headings that carry it
    expansion: str  # extra query text for the dense/sparse search
    slot: str  # what an answering span must state: jurisdiction|duration|amount|parties|date|clause
    strong: tuple[str, ...] = field(default=())  # operative wordings: an answering span has one of them
    reject: tuple[str, ...] = field(default=())  # a span matching one of these is not this clause

    def text_score(self, text: str) -> float:
        """0..~3: distinct wordings found (strong ones count double)."""
        t = flat(text).lower()
        score = sum(1.0 for w in self.wordings if re.search(w, t))
        score += sum(2.0 for w in self.strong if re.search(w, t))
        return min(score, 4.0) / 4.0 * 3.0

    def heading_match(self, section: str) -> bool:
        s = flat(section or "").lower()
        return any(re.search(rf"\b{h}", s) for h in self.headings)


C = ClauseType
TYPES: tuple[ClauseType, ...] = (
    C("governing law",
      (r"governing law", r"govern(s|ed|ing)?\b.*\blaw", r"\blaws? (of|govern)", r"choice of law", r"jurisdiction",
       r"which (state|country)'?s? law", r"applicable law"),
      (r"governed by", r"construed (in accordance with|under)", r"laws of the (state|commonwealth|province)",
       r"\blaws of\b", r"without (regard|giving effect) to (its |any )?(the )?(conflicts?|choice)", r"governing law",
       r"interpret(ed|ation)"),
      ("governing law", "applicable law", "choice of law", "law"),
      "governed by and construed in accordance with the laws of the State governing law", "jurisdiction",
      strong=(r"govern\w*[^.;]{0,80}laws? (in force )?(of|in)\b", r"laws? (in force )?(of|in) [^.;]{0,80}(shall |will )?(govern|apply|prevail)",
              r"(construed|interpreted|enforced) [^.;]{0,60}laws? (in force )?(of|in)\b")),
    C("change of control",
      (r"change (of|in) control", r"merger", r"acquisition of", r"acquired", r"takeover"),
      (r"change (of|in) (the )?control", r"merger", r"consolidat", r"acquisition", r"acquire[sd]?",
       r"(all|substantially all) (or substantially all )?of (its|the) (assets|stock|business)",
       r"(voting|outstanding) (securities|stock|shares)", r"operation of law"),
      ("change of control", "change in control", "assignment", "merger"),
      "change of control merger acquisition of all or substantially all assets voting securities", "clause",
      strong=(r"change (of|in) (the )?control[^.;]{0,200}(terminat|consent|assign|notif|notice|deemed|right)",
              r"(terminat|consent|assign|notif|notice|deemed)[^.;]{0,200}change (of|in) (the )?control",
              r"(merger|consolidat|acqui\w+|sale of (all|substantially all))[^.;]{0,200}(may|right to|entitled to) terminat")),
    C("anti-assignment",
      (r"assign", r"transfer (the|this) (agreement|contract)", r"novat"),
      (r"\bassign", r"transfer", r"prior written consent", r"without the (prior )?(written )?consent",
       r"null and void", r"successors and (permitted )?assigns", r"delegate"),
      ("assignment", "assignability", "transfer", "successors"),
      "may not assign or transfer this agreement without the prior written consent of the other party", "clause",
      strong=(r"(not|no party may|neither party (may|shall)).{0,60}assign", r"assign.{0,80}without.{0,30}consent")),
    C("cap on liability",
      (r"cap on liab", r"liability cap", r"limit(ation)? (of|on) liab", r"maximum liab", r"liab\w* (is )?(capped|limited)",
       r"cap(ped)? .*liab", r"aggregate liab"),
      (r"(aggregate|total|maximum|cumulative) liability", r"shall not exceed", r"in no event shall", r"limitation of liability",
       r"liab\w+ .{0,60}(limited to|exceed)", r"consequential", r"amounts? (paid|payable)", r"indirect"),
      ("limitation of liability", "limitation on liability", "liability", "limitations"),
      "limitation of liability aggregate liability shall not exceed the amounts paid in no event shall", "amount",
      strong=(r"liab\w*[^.]{0,160}(shall not|will not|not to|in no event) exceed", r"liab\w*[^.]{0,120}(limited to|capped at)",
              r"(aggregate|total|maximum|cumulative) liab\w*[^.]{0,160}(exceed|limited|greater than)",
              r"in no event[^.]{0,160}liab\w*[^.]{0,160}(exceed|for any (indirect|special|consequential|punitive|incidental))",
              r"(not|in no event) be liable[^.]{0,160}(indirect|special|consequential|punitive|incidental|lost profits)")),
    C("termination for convenience",
      (r"for convenience", r"without cause", r"terminat\w* .*(any reason|at will|at any time)", r"no reason"),
      (r"for convenience", r"without cause", r"for any reason", r"at any time", r"upon (\w+ )?\(?\d*\)? ?(days|months)'? (prior )?(written )?notice",
       r"terminat", r"(prior )?written notice"),
      ("termination", "term and termination"),
      "either party may terminate this agreement for convenience without cause at any time upon days prior written notice", "clause",
      strong=(r"(may|right to|entitled to|option to|can) terminat\w*[^.;]{0,160}(for convenience|without cause|for any reason|for no reason|with or without cause|at (its|their) (sole )?(discretion|option|convenience))",
              r"(may|right to|entitled to|option to|can) terminat\w*[^.;]{0,100}(at any time|upon|by giving|on|with)[^.;]{0,40}(\d+|one|two|three|thirty|sixty|ninety)\)?[^.;]{0,20}(days|months)[^.;]{0,30}notice(?![^.;]{0,60}\b(if|in the event|breach|fail))",
              r"(continue|remain)[^.;]{0,80}until[^.;]{0,60}(terminat|notif)[^.;]{0,80}notice")),
    C("renewal term",
      (r"renew", r"extension", r"extend(ed)? term", r"auto(matic)?(ally)? (renew|extend)", r"evergreen"),
      (r"renew", r"successive", r"automatically", r"extend", r"additional (term|period)", r"unless (either|a) party",
       r"notice of (its )?(intent|intention)? ?(not to renew|non-renewal)"),
      ("term", "renewal", "duration"),
      "automatically renew for successive additional one year renewal terms unless either party gives notice of non-renewal",
      "duration", strong=(r"(automatically|successive|additional|further)[^.]{0,60}(renew|extend)",
                          r"(renew|extend)\w*[^.]{0,80}(successive|additional|further|renewal term|for (a|an|one|two|three|four|five|\d+)\b[^.]{0,20}(year|month))",
                          r"(successive|additional|renewal) (term|period)s?")),
    C("expiration date",
      (r"expir", r"initial term", r"(how long|when) .*(term|last|end)", r"term of (the|this) (agreement|contract)",
       r"duration", r"end date"),
      (r"initial term", r"expire", r"term of (this|the) agreement", r"(continue|remain) in (full )?(force|effect)",
       r"until", r"period of", r"commenc", r"\(\d+\) (year|month)s?"),
      ("term", "duration", "term and termination"),
      "the term of this agreement shall commence on the effective date and continue in force for a period of years until it expires",
      "duration", strong=(r"(this agreement|the term|initial term|term hereof)[^.;]{0,80}(continue|remains? in (full )?(force|effect)|expire|end|terminate|be for|shall be|commence)[^.;]{0,100}(\d|one|two|three|four|five|six|seven|eight|nine|ten|twelve|until|anniversary|perpetu|indefinite)",
                          r"(expire|expiration|terminate|end)s?[^.;]{0,20} on [^.;]{0,40}\d{4}",
                          r"term of (this agreement|the agreement)[^.;]{0,40}(is|shall be|will be)[^.;]{0,60}(years?|months?)")),
    C("license grant",
      (r"licen[cs]e", r"right to use", r"sublicen"),
      (r"hereby grants?", r"grants? to", r"licen[cs]e", r"non-?exclusive", r"royalty", r"right to (use|make|sell|reproduce)",
       r"sublicens"),
      ("license", "licence", "grant"),
      "hereby grants a non-exclusive license right to use", "clause",
      strong=(r"grants?\b[^.;]{0,120}licen[cs]e", r"licen[cs]e[sd]?\b[^.;]{0,40}(is|are)? ?(hereby )?granted",
              r"grants?\b[^.;]{0,80}right to (use|make|sell|reproduce|distribute|market|display)")),
    C("non-compete",
      (r"non-?compet", r"not compete", r"competition", r"compet(e|ing)", r"restrictive covenant"),
      (r"compet", r"shall not.{0,60}(engage|develop|market|sell|distribute)", r"directly or indirectly", r"during the term",
       r"territory", r"similar (products|services)"),
      ("non-compet", "competition", "restrictive covenant", "exclusivity", "covenant"),
      "shall not directly or indirectly engage in any competing business compete with during the term", "clause",
      strong=(r"(shall|will|agrees? (to|that it will)|must|may) not[^.;]{0,160}(compet(e|es|ing|ition|itor|itive)\b|become a competitor)",
              r"\bnot[^.;]{0,60}(engage|participate|be involved|invest) in[^.;]{0,100}(business|compet(e|ing|itive)|similar|rival)",
              r"(shall|will) refrain[^.;]{0,120}compet(e|ing|itive|ition)\b", r"not to compete\b")),
    C("exclusivity",
      (r"exclusiv", r"sole (supplier|distributor|provider|source)", r"requirements"),
      (r"exclusive", r"exclusively", r"sole (and exclusive )?(supplier|distributor|provider|source|right)",
       r"(shall|will) not.{0,80}(any other|third part)", r"all (of )?its requirements"),
      ("exclusiv", "appointment", "grant of rights"),
      "exclusive right sole and exclusive distributor shall not appoint any other third party", "clause",
      strong=(r"(?<!non-)(?<!non )(?<!non)exclusive(ly)? (right|rights|dealing|distributor|supplier|provider|licen[cs]e|basis|appointment|reseller|agent|sponsor|partner|provider|manufacturer|source|territory)",
              r"sole and exclusive (right|distributor|supplier|provider|source)",
              r"exclusively (from|to|through|with|for) (the )?(supplier|company|distributor|licensor|licensee|buyer|customer|[A-Z])",
              r"(shall|will) not[^.;]{0,120}(any other|any third part|other (supplier|distributor|provider|vendor)s?)[^.;]{0,80}(supply|sell|distribut|purchase|licen|appoint|provide|promot|endors)",
              r"all (of )?(its|their) requirements"),
      reject=(r"\b(not|no|nothing)\b[^.;]{0,60}\b(grant|create|confer)s?\b[^.;]{0,40}\bexclusive", r"\bdisclos")),
    C("audit rights",
      (r"audit", r"inspect", r"books and records", r"examin"),
      (r"audit", r"inspect", r"books", r"records", r"examin", r"accountant", r"upon (reasonable|\w+ days') (prior )?notice"),
      ("audit", "records", "inspection", "books"),
      "right to audit inspect and examine books and records upon reasonable notice independent accountant", "clause",
      strong=(r"right to (conduct |perform |have )?(an? )?(independent )?audit\b",
              r"(audit|inspect|examin)\w*[^.;]{0,100}(books|records|accounts|facilit|premises|plants?|operations|compliance|statements)",
              r"(books|records|accounts)[^.;]{0,100}(audit|inspect|examin)")),
    C("insurance",
      (r"insur", r"coverage", r"policy limits"),
      (r"insurance", r"insured", r"coverage", r"policy|policies", r"liability insurance", r"general liability",
       r"certificate", r"\$[\d,]+"),
      ("insurance",),
      "shall maintain insurance coverage commercial general liability insurance policy with limits of", "clause",
      strong=(r"(maintain|carry|procure|obtain).{0,80}insurance",)),
    C("parties",
      (r"who are the parties", r"\bparties\b", r"who (signed|entered)", r"between whom", r"counterpart(y|ies)"),
      (r"by and between", r"between", r"entered into", r"(inc|llc|ltd|corp|corporation|company|limited|gmbh|plc)\b",
       r"\(.{0,20}[\"“].{1,40}[\"”]\)", r"organized under", r"principal (place|office)"),
      ("parties", "preamble"),
      "this agreement is entered into by and between company a corporation and", "parties",
      strong=(r"(by and )?between .{3,200} and ", r"(by and )?among .{3,200} and ", r"entered into .{3,200} (by|between|with) ")),
    C("agreement date",
      (r"(agreement|contract|effective|execution) date", r"date of (the|this) (agreement|contract)", r"when was .* (signed|entered|dated|made)",
       r"dated"),
      (r"dated", r"as of", r"entered into", r"effective date", r"made (and entered into )?(on|as of)", r"day of",
       r"(january|february|march|april|may|june|july|august|september|october|november|december)"),
      ("effective date", "date"),
      "this agreement is made and entered into as of the day of dated effective date", "date",
      strong=(r"(dated|entered into|made|executed|effective)( and entered into)?( as of| on| this| effective)",)),
    C("notice period",
      (r"notice period", r"how (much|many days'?)( of)? notice", r"notice (is )?(required|needed)", r"days'? (of )?notice",
       r"notice .{0,40}terminat", r"terminat.{0,40}notice"),
      (r"notice", r"days", r"written notice", r"prior"),
      ("notice", "termination"),
      "upon days prior written notice", "duration", strong=(r"\(?\d+\)? days'? (prior )?(written )?notice",)),
    C("indemnification",
      (r"indemn", r"hold harmless"),
      (r"indemnif", r"hold harmless", r"defend", r"claims", r"losses"),
      ("indemnif",), "shall indemnify defend and hold harmless against all claims losses", "clause",
      strong=(r"indemnify.{0,40}(defend|hold)",)),
    C("confidentiality",
      (r"confidential", r"non-?disclosure"),
      (r"confidential information", r"disclose", r"confidential"),
      ("confidential",), "confidential information shall not disclose", "clause", strong=(r"confidential information",)),
    C("warranty",
      (r"warrant",), (r"warrant", r"free from defects", r"merchantability"),
      ("warrant",), "warrants that warranty period", "clause", strong=(r"warrants? that",)),
    C("non-solicitation",
      (r"solicit", r"poach", r"hire .*employees"),
      (r"solicit", r"employ", r"hire", r"induce"),
      ("solicit", "non-solicit"), "shall not solicit or hire employees", "clause", strong=(r"(not|no).{0,40}solicit",)),
    C("dispute resolution",
      (r"arbitrat", r"dispute", r"\bvenue", r"forum", r"courts?\b"),
      (r"arbitrat", r"dispute", r"courts? (of|in|located)", r"\bvenue", r"exclusive jurisdiction"),
      ("arbitration", "dispute", "jurisdiction", "venue"),
      "disputes shall be resolved by arbitration courts exclusive jurisdiction venue", "clause",
      strong=(r"arbitrat", r"exclusive jurisdiction")),
)
BY_NAME = {t.name: t for t in TYPES}
# a definition ("Change of Control" means ...) names a clause type without being the clause
DEFINITION = re.compile(r"^\W*(\(?[a-z0-9]{1,4}[.)]\s*)?[\"“][^\"”]{1,60}[\"”]\s*(shall )?(mean|means|has the meaning|refers)\b",
                        re.I)
# A question naming several clause types is read as the most specific one (order of this tuple).
_PRIORITY = ("change of control", "termination for convenience", "cap on liability", "renewal term", "non-compete",
             "non-solicitation", "audit rights", "insurance", "license grant", "exclusivity", "anti-assignment",
             "governing law", "dispute resolution", "indemnification", "confidentiality", "warranty", "notice period",
             "expiration date", "agreement date", "parties")


def detect(question: str) -> ClauseType | None:
    """The clause type a question asks about, or None."""
    q = question.lower()
    hits = [t for t in TYPES if any(re.search(a, q) for a in t.ask)]
    if not hits:
        return None
    order = {n: i for i, n in enumerate(_PRIORITY)}
    return min(hits, key=lambda t: order.get(t.name, len(order)))
