"""The learners where users already evaluate models: river and scikit-learn.

- :mod:`service.adapters.river_classifier`: ``ACOGClassifier``, a ``river.base.Classifier``
  (``learn_one``/``predict_one``/``score_one`` on ``{name: value}`` dicts, through the
  service's own feature registry), usable in ``river.evaluate.progressive_val_score``;
- :mod:`service.adapters.sklearn_estimator`: ``SklearnACOGClassifier``, a scikit-learn
  estimator (``partial_fit``, ``fit``, ``predict``, ``decision_function``; class weights
  mapped to the cost-sensitive objective).

river and scikit-learn are optional (the ``bench`` extra): import the module you need.
"""
