"""Numbers written with commas, as spreadsheets and locales write them: what a comma in a number
most likely means, so that a refusal can say how to write the value.

'18,000', '2,450.75', '1,234,567' hold thousands separators; '0,844', '12,5' a decimal comma;
'1,300' either (a thousands separator, 1300, or a decimal comma, 1.3).  Why it matters: a hint
that assumed a decimal comma told users to write 1,300 medical dollars as 1.300, a thousandth.
"""

from __future__ import annotations

import re
from typing import Literal

_THOUSANDS = re.compile(r"[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d+)?")
_DECIMAL = re.compile(r"[-+]?\d+,\d+")

CommaKind = Literal["thousands", "decimal", "either"]


def comma_kind(text: str) -> CommaKind | None:
    """How ``text`` reads as a number with commas, or None when it is not one."""
    t = text.strip()
    thousands, decimal = _THOUSANDS.fullmatch(t) is not None, _DECIMAL.fullmatch(t) is not None
    if thousands and decimal:
        return "either"
    return "thousands" if thousands else "decimal" if decimal else None


def comma_hint(text: str) -> str:
    """How to write ``text`` without its commas ('' when it is no number with commas)."""
    t, kind = text.strip(), comma_kind(text)
    if kind == "thousands":
        return f"thousands separators? write {t.replace(',', '')}"
    if kind == "decimal":
        return f"a decimal comma? write {t.replace(',', '.')}"
    if kind == "either":
        return f"a thousands separator ({t.replace(',', '')}) or a decimal comma ({t.replace(',', '.')})?"
    return ""
