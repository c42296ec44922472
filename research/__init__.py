"""What ``acog evaluate`` and ``acog replay`` read and run: data set loaders and evaluation protocols.

This is the offline half of the product. The serving path (``service.api``, ``service.engine``,
``service.telemetry``) never imports it; the learners (``service.learners``) are what it evaluates.

- :mod:`service.evaluation.datasets`: the shared benchmark data sets by name, and readers for LIBSVM,
  ``.mat`` and ESL files;
- :mod:`service.evaluation.online`: the ACOG paper's online protocol (predict, then learn every label
  at once, over permutations), with the paper's columns;
- :mod:`service.evaluation.sdrogd`: the SDROGD paper's protocol (80/20 splits, 3-fold CV over its grids,
  accuracy and AUC), with :mod:`service.learners.sdrogd_grid` (a whole grid in one pass) and
  :mod:`service.evaluation.sdrogd_cli` (its options);
- :mod:`service.evaluation.protocols`: the registry ``acog evaluate --protocol`` chooses from;
- :mod:`service.evaluation.cli`: the ``acog evaluate`` command line.
"""
