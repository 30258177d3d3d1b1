"""Value checks shared by the command line, the loop, the strategies and the library, in a module
with no imports beyond the standard library so that any of them can use it without loading torch."""

from __future__ import annotations

import numbers


def is_whole_number(value: object) -> bool:
    """True for a Python or NumPy integer; False for bools (True is no batch size), floats (2.5 was cut
    to 2 unsaid, 2.0 failed inside NumPy), None and text: the one test every count and seed passes."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy.bool_ is no Integral
