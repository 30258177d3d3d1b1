"""Value checks shared by the command line, the loop, the strategies and the library, in a module
with no imports beyond the standard library so that any of them can use it without loading torch."""

from __future__ import annotations

import numbers


def is_whole_number(value: object) -> bool:
    """True for a Python or NumPy integer; False for bools (True is no batch size), floats (2.5 was cut
    to 2 unsaid, 2.0 failed inside NumPy), None and text: the one test every count and seed passes."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy.bool_ is no Integral


def not_distribution_rows(p_n_C):  # noqa: ANN001, ANN201 - a NumPy array or a torch tensor, and the same kind back
    """Rows of class probabilities (n, C) that are no distribution: a NaN or inf, a value outside [0, 1]
    beyond 1e-6, or a sum off 1 by more than 1e-3 (a user's learner handing over logits, a broken row).
    Written with operators NumPy and torch share, so the acquisitions (torch) and the selectors (NumPy)
    refuse the same rows without this module importing either."""
    finite = (p_n_C == p_n_C) & (abs(p_n_C) != float("inf"))
    return ~finite.all(1) | (p_n_C < -1e-6).any(1) | (p_n_C > 1 + 1e-6).any(1) | (abs(p_n_C.sum(1) - 1) > 1e-3)


def distribution_problem(p_n_C) -> str | None:  # noqa: ANN001 - a NumPy array or a torch tensor
    """None where every row of ``p_n_C`` is a distribution, else the words naming the first row that is not
    (its index and first values, and how many such rows), which the loop and the acquisitions put in their
    errors alike."""
    bad_n = not_distribution_rows(p_n_C)
    count = int(bad_n.sum())
    if count == 0:
        return None
    i = int(bad_n.nonzero()[0][0])
    first = [round(float(v), 4) for v in p_n_C[i, :4]]
    return (f"row {i} of probs_n_C is not a distribution (finite values in [0, 1] summing to 1), e.g. {first}; "
            f"{count} such row{'s' if count != 1 else ''}")
