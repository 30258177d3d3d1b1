"""A scikit-learn pipeline for `alkit run --learner mymodels:scaled_logreg`.

alkit calls the function for every model it fits (bootstrap members included: `-o members=5`), so
it must return a fresh, unfitted estimator with fit and predict_proba (predict for regression).
"""

from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def scaled_logreg():
    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
