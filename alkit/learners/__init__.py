"""Learners: the scorers that train a model (VBLL heads, Laplace, CSD, gradient norms, ensembles, MC dropout,
SVE, BayesVLM); each module is one learner (alkit.registry maps names to them)."""
