"""A period said of a relation is a tenure: how long the customer has been with the operator.

"been with you 12 years", "a customer for 2 yrs", "customer since 15 years", "has been with the operator
for eight years", "only joined 6 months ago", "a tenure of three years": the words around each period
say the same idea, being with someone, while the rest of each line says what the request is about anyway
(a fault-diagnosis request about an outage: "and the mast near me has been dead all day"). A key named
from the whole lines took that (`total_outage`); the idea the clauses share around the period names it.

`tenure_phrase` reads the few words before each fragment's first period (`periods.find_periods`): when
most fragments say a relation there (with you / us / the operator / a brand, a customer or member for /
since, joined, tenure), the key is the tenure of the one who holds it, the holder noun the fragments use
("customer", "member", "subscriber"). Said only as "with you" or "with us" to an operator, the one who is
with it is its customer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from an_agent.schemas.periods import find_periods

_WINDOW = 48  # characters before a period that say what it is of ("has been with the operator for")
# The holders of a relation with an operator, by their singular.
_HOLDERS = {"customer": "customer", "member": "member", "subscriber": "subscriber", "client": "client"}
_HOLDER = re.compile(r"\b(customer|member|subscriber|client)s?\b", re.IGNORECASE)
# A relation said before the period: being with someone, a holder for / since, joining, a tenure.
_RELATION = re.compile(
    r"\bwith\s+(?:you|us|the\s+(?:operator|network|company|provider)|your\s+\w+|(?-i:[A-Z][\w-]+))\b"
    r"|\b(?:customer|member|subscriber|client)s?\s+(?:for|since|of)\b"
    r"|\bjoined\b|\btenure\b|\bsigned\s+up\b",
    re.IGNORECASE,
)
_SHARE = 0.5  # fragments with a period that must say a relation around it


def tenure_phrase(texts: Sequence[str]) -> str | None:
    """ "<holder> tenure" ("customer tenure") when at least half the fragments that state a period say a
    relation around it (module docstring), else None."""
    related, holders, said = 0, Counter[str](), 0
    for text in texts:
        periods = find_periods(text)
        if not periods:
            continue
        said += 1
        frame = text[max(0, periods[0].start - _WINDOW) : periods[0].start]
        if _RELATION.search(frame):
            related += 1
            holders.update(_HOLDERS[m.lower()] for m in _HOLDER.findall(frame))
    if not said or related < _SHARE * said:
        return None
    holder = holders.most_common(1)[0][0] if holders else "customer"
    return f"{holder} tenure"
