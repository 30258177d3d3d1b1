"""A user-defined torch network for `alkit run --backbone mynets:digits_cnn`.

alkit calls the function with the project's image shape (C, H, W) (or the number of features on a
tabular project) and uses the module's output as the feature vector every last-layer scorer
(VBLL, Laplace, CSD, gradient norm) and the ensembles work on.  Inputs arrive standardised with the
pool's statistics and shaped (n, C, H, W).
"""

from torch import nn


def digits_cnn(shape):
    c, h, w = shape
    return nn.Sequential(
        nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (h // 2) * (w // 2), 64), nn.ReLU(),
    )
