"""Acquisitions: one score per item from a Prediction, chosen per run (``alkit run --acquisition``).

Independent of the learner (a learner whose Prediction lacks what an acquisition needs is refused
by name) and of the selector (every selector ranks or diversifies the scores it is given).
``ACQUISITIONS`` maps the CLI name to the class; add one by one module and one line here.
"""

from __future__ import annotations

from alkit.acquisition._common import AcquisitionError
from alkit.acquisition.bald import BALDAcquisition
from alkit.acquisition.decision_bald import DecisionBALDAcquisition
from alkit.acquisition.decision_risk import DecisionRiskAcquisition
from alkit.acquisition.entropy import EntropyAcquisition
from alkit.acquisition.epig import DecisionEPIGAcquisition, EPIGAcquisition, EPIGTargets
from alkit.acquisition.epistemic import EpistemicAcquisition
from alkit.acquisition.flip import FlipAcquisition
from alkit.acquisition.least_confident import LeastConfidentAcquisition
from alkit.acquisition.margin import MarginAcquisition
from alkit.types import Acquisition

ACQUISITIONS: dict[str, type] = {
    "epistemic": EpistemicAcquisition,
    "bald": BALDAcquisition,
    "epig": EPIGAcquisition,
    "epig-decision": DecisionEPIGAcquisition,
    "decision-flip": FlipAcquisition,
    "decision-bald": DecisionBALDAcquisition,
    "decision-risk": DecisionRiskAcquisition,
    "margin": MarginAcquisition,
    "entropy": EntropyAcquisition,
    "least-confident": LeastConfidentAcquisition,
}
BASELINE_ACQUISITIONS = ("margin", "entropy", "least-confident")  # no posterior: what `epistemic` must beat


def get_acquisition(name: str) -> Acquisition:
    """An acquisition instance by name; an unknown name is a ValueError listing the known ones."""
    try:
        return ACQUISITIONS[name]()
    except KeyError:
        from alkit.choices import peer_name_hint

        raise ValueError(f"unknown acquisition {name!r}{peer_name_hint(name, ACQUISITIONS)}; known: "
                         f"{', '.join(ACQUISITIONS)}") from None


def summary(name: str) -> str:
    """The first sentence of an acquisition's docstring (its first paragraph up to a full stop, over
    as many lines as it takes), for `alkit strategies`: the first line alone cut some mid-sentence."""
    import re

    para = " ".join((ACQUISITIONS[name].__doc__ or "").strip().split("\n\n")[0].split())
    m = re.search(r"\.(\s|$)", para)
    return para[: m.start() + 1] if m else para


__all__ = ["ACQUISITIONS", "BASELINE_ACQUISITIONS", "AcquisitionError", "EPIGTargets", "get_acquisition", "summary"]
