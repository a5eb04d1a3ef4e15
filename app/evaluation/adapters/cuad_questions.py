"""How a lawyer asks for each CUAD category (after the CUAD v1 README's category descriptions)."""
from __future__ import annotations

# category -> the question, asked of "the agreement" (the adapter prefixes "Consider the <name> between <parties>;")
QUESTIONS = {
    "Parties": "who are the parties to this agreement?",
    "Agreement Date": "what is the date of this agreement?",
    "Effective Date": "on what date does this agreement become effective?",
    "Expiration Date": "when does the initial term of this agreement expire?",
    "Renewal Term": "what is the renewal term after the initial term expires, and does the agreement renew automatically?",
    "Notice Period To Terminate Renewal": "what notice period is required to terminate renewal?",
    "Governing Law": "what is the governing law?",
    "Most Favored Nation": "is there a most favored nation clause entitling the buyer to better terms given to a third party?",
    "Competitive Restriction Exception": "what exceptions or carve-outs apply to the non-compete, exclusivity or no-solicit restrictions?",
    "Non-Compete": "is there a non-compete restricting a party from competing or operating in a geography, business or sector?",
    "Exclusivity": "is there an exclusive dealing commitment, such as exclusivity or a requirement to buy only from the counterparty?",
    "No-Solicit Of Customers": "is a party restricted from soliciting customers or partners of the counterparty?",
    "No-Solicit Of Employees": "is a party restricted from soliciting or hiring employees of the counterparty?",
    "Non-Disparagement": "is a party required not to disparage the counterparty?",
    "Termination For Convenience": "can a party terminate this agreement for convenience, without cause, on notice?",
    "Rofr/Rofo/Rofn": "is there a right of first refusal, first offer or first negotiation?",
    "Change Of Control": "what happens on a change of control of a party, such as a merger or acquisition?",
    "Anti-Assignment": "can a party assign this agreement, or is consent of the other party required for assignment?",
    "Revenue/Profit Sharing": "does a party have to share revenue or profits with the counterparty?",
    "Price Restrictions": "is there a restriction on raising or reducing prices?",
    "Minimum Commitment": "is there a minimum order, purchase or commitment amount?",
    "Volume Restriction": "is there a cap or limit on the volume of purchases or use?",
    "Ip Ownership Assignment": "does intellectual property created by one party become the property of the counterparty?",
    "Joint Ip Ownership": "is there joint or shared ownership of intellectual property?",
    "License Grant": "what license is granted under this agreement, and by whom to whom?",
    "Non-Transferable License": "is the license non-transferable or limited in its transfer to third parties?",
    "Affiliate License-Licensor": "does the license cover intellectual property of the licensor's affiliates?",
    "Affiliate License-Licensee": "does the license extend to the licensee's affiliates?",
    "Unlimited/All-You-Can-Eat-License": "is the license unlimited in use or number of users?",
    "Irrevocable Or Perpetual License": "is the license irrevocable or perpetual?",
    "Source Code Escrow": "is source code held in escrow for the benefit of the licensee?",
    "Post-Termination Services": "what obligations continue after termination, such as transition services or wind-down?",
    "Audit Rights": "does a party have the right to audit the books, records or physical locations of the counterparty?",
    "Uncapped Liability": "is any liability uncapped, for example for breach of confidentiality or indemnification?",
    "Cap On Liability": "is there a cap on liability, and what is the limit?",
    "Liquidated Damages": "are there liquidated damages or a termination fee?",
    "Warranty Duration": "how long is the warranty period?",
    "Insurance": "what insurance must a party maintain?",
    "Covenant Not To Sue": "is a party restricted from challenging the counterparty's intellectual property or bringing claims?",
    "Third Party Beneficiary": "is there a third-party beneficiary of this agreement?",
}

# the acceptance categories (#12): the default set
CORE = ["Governing Law", "Expiration Date", "Renewal Term", "Anti-Assignment", "Change Of Control", "Cap On Liability",
        "Termination For Convenience", "License Grant", "Non-Compete", "Exclusivity", "Audit Rights", "Insurance",
        "Parties", "Agreement Date"]
# categories whose normalised "-Answer" value (a state, a date) must also appear in a correct answer
VALUE_CATEGORIES = {"Governing Law", "Agreement Date", "Effective Date", "Expiration Date"}
