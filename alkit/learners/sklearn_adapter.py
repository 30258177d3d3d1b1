"""`--learner MODULE:FUNCTION`: any scikit-learn estimator as alkit's learner.

The function returns an unfitted estimator with ``fit`` and ``predict_proba`` (classification) or
``predict`` (regression).  The adapter fits ``members`` clones of it on bootstrap resamples of the
labelled set (seeded; ``random_state`` set per member where the estimator has one), so its
Prediction carries member distributions: margin, entropy and least-confident read their mean,
BALD / EPIG / `epistemic` the disagreement between members (the bootstrap is the epistemic part an
estimator without a posterior can offer; ``members=1`` fits it once and reports no epistemic
score).  Regression members give the mean prediction and a Gaussian with each member's training
residual variance.  Acquisitions that need a Gaussian last layer (decision-flip, the epistemic
preset's) are refused by name: use margin, entropy, bald or epig with topk or power.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alkit.learners.bald import classification_prediction, regression_prediction
from alkit.models.backbone import InputSpec
from alkit.models.train import TrainConfig
from alkit.models.user_backbone import load_factory
from alkit.types import GaussianLastLayer, Prediction, Task


def _is_classifier(est: Any) -> bool:
    """scikit-learn's own test (its estimator tags: a Pipeline ending in a classifier is one)."""
    try:
        from sklearn.base import is_classifier

        return bool(is_classifier(est))
    except Exception:  # noqa: BLE001 - not a scikit-learn estimator: its methods are checked below
        return False


class SklearnLearner:
    """A scikit-learn estimator behind alkit's Learner protocol (see the module docstring)."""

    trains_network = False  # no `-o train.*` options: the estimator trains itself

    def __init__(self, task: Task, n_classes: int | None = None, *, estimator: str = "", members: int = 5,
                 train: TrainConfig | None = None, input: InputSpec | None = None) -> None:  # noqa: A002
        if not estimator:
            raise ValueError("the sklearn learner needs estimator=MODULE:FUNCTION (alkit run --learner)")
        if members < 1:
            raise ValueError(f"members must be at least 1, got {members}")
        self.task, self.n_classes, self.ref, self.M = task, n_classes, estimator, members
        self.factory = load_factory(estimator, flag="--learner")
        self._estimator()  # one call now: a factory that cannot give a usable estimator is refused before a run
        self.input = input
        self.members_: list[Any] = []
        self.resid_var_: list[float] = []

    def _estimator(self) -> Any:
        """A fresh estimator from the user's function, checked for what this task calls: fit, and
        predict_proba (classification) or predict (regression).  Why up front: an SVC without
        probabilities, a factory returning the class itself or needing arguments failed only after the
        first batch was spent (a traceback, or labels people had already given)."""
        try:
            est = self.factory()
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"--learner {self.ref!r} failed when called: {type(exc).__name__}: {exc}") from None
        if isinstance(est, type):
            raise ValueError(f"--learner {self.ref!r} returned the class {est.__name__}, not an estimator: "
                             f"return {est.__name__}(...)")
        if self.task == "regression" and _is_classifier(est):  # it failed at the first fit, a batch spent
            raise ValueError(f"--learner {self.ref!r} returned {type(est).__name__}, a classifier, on a regression "
                             "project: return a regressor (fit, predict)")
        need = ("fit", "predict_proba" if self.task == "classification" else "predict")
        missing = [m for m in need if not callable(getattr(est, m, None))]
        if missing:
            why = (" (an SVC needs probability=True)" if missing == ["predict_proba"] else "")
            raise ValueError(f"--learner {self.ref!r} returned {type(est).__name__} without {', '.join(missing)}(): "
                             f"a {self.task} estimator needs {', '.join(need)}{why}")
        return est

    def _embed(self, X: np.ndarray) -> torch.Tensor:
        """The standardised inputs (pool statistics when known): what diversity selectors compare."""
        mean = self.input.mean_f if self.input is not None and self.input.mean_f is not None else X.mean(0)
        std = self.input.std_f if self.input is not None and self.input.std_f is not None else X.std(0)
        return torch.as_tensor((X - mean) / np.where(std > 1e-8, std, 1.0), dtype=torch.float32)

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        rng = np.random.default_rng(seed)
        n = len(y_n)
        self.members_, self.resid_var_ = [], []
        for m in range(self.M):
            idx = np.arange(n) if self.M == 1 else rng.integers(0, n, n)
            if self.task == "classification" and len(np.unique(y_n[idx])) < 2:
                idx = np.arange(n)  # a resample with one class cannot be fitted: use every label
            est = self._estimator()
            if "random_state" in getattr(est, "get_params", dict)():
                est.set_params(random_state=int(rng.integers(2**31 - 1)))
            # an estimator that draws from NumPy's global generator (no random_state) picked other items on
            # every run of one seed: it is seeded per member here, and the caller's global state restored
            state = np.random.get_state()
            np.random.seed(int(np.random.SeedSequence([seed, m]).generate_state(1)[0]))
            try:
                est.fit(X_n_f[idx], y_n[idx])
            except Exception as exc:  # noqa: BLE001 - the user's code: named, in one line
                raise ValueError(f"--learner {self.ref!r} failed in fit: {type(exc).__name__}: {exc}") from None
            finally:
                np.random.set_state(state)
            classes = np.asarray(getattr(est, "classes_", np.arange(0)))
            if self.task == "classification" and not np.issubdtype(classes.dtype, np.integer) and not (
                    np.issubdtype(classes.dtype, np.floating) and np.all(classes == np.round(classes))):
                raise ValueError(f"--learner {self.ref!r}: its classes_ are {classes[:3].tolist()}, not the class "
                                 "indices 0..C-1 alkit fits it on; keep the labels fit is given")
            if self.task == "regression":
                self.resid_var_.append(float(np.var(y_n[idx] - est.predict(X_n_f[idx]))) + 1e-12)
            self.members_.append(est)
        return {"members": float(self.M)}

    def predict(self, X_n_f: np.ndarray) -> Prediction:
        if not self.members_:
            raise RuntimeError("fit the learner before predicting")
        width = getattr(self.members_[0], "n_features_in_", None)
        if width is not None and (np.ndim(X_n_f) != 2 or np.shape(X_n_f)[1] != width):  # numpy's broadcast error
            raise ValueError(f"the estimator was fitted on inputs of shape (n, {width}), got {tuple(np.shape(X_n_f))}")
        emb = self._embed(np.asarray(X_n_f, dtype=np.float64))
        if self.task == "classification":
            probs = np.zeros((len(X_n_f), self.M, int(self.n_classes or 0)))
            for m, est in enumerate(self.members_):
                if not hasattr(est, "predict_proba"):
                    raise ValueError(f"--learner {self.ref!r}: a classifier needs predict_proba")
                probs[:, m, np.asarray(est.classes_, dtype=np.int64)] = est.predict_proba(X_n_f)
            if not np.isfinite(probs).all():  # named here: it surfaced as an acquisition's undefined score
                raise ValueError(f"--learner {self.ref!r} returned NaN or infinite probabilities from predict_proba")
            return classification_prediction(torch.as_tensor(probs, dtype=torch.float32), emb)
        means = np.stack([est.predict(X_n_f) for est in self.members_], 1)
        if not np.isfinite(means).all():
            raise ValueError(f"--learner {self.ref!r} returned NaN or infinite predictions from predict")
        var = np.broadcast_to(np.asarray(self.resid_var_)[None, :], means.shape)
        return regression_prediction(torch.as_tensor(means), torch.as_tensor(var.copy()), emb)

    def posterior(self) -> GaussianLastLayer | None:
        return None
