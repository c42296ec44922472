"""Research and reproduction: the papers' evaluation protocols and the readable reference
implementations, apart from the product.

It imports the product (``service``: the learners it evaluates, the data sets it reads) and the
product never imports it (an import-linter contract). It ships in the same distribution, and adds
``acog evaluate`` to the ``acog`` command through an entry point (``acog.commands``).

- :mod:`research.protocols`: the registry ``acog evaluate --protocol`` chooses from, and one
  module per protocol: :mod:`~research.protocols.online` (the ACOG paper's: predict, then learn
  every label at once, over permutations, with the paper's columns), :mod:`~research.protocols.oli2ds`
  (incomplete streams), :mod:`~research.protocols.opid` (a feature schema that changes once) and
  :mod:`~research.protocols.sdrogd` (80/20 splits, 3-fold CV over its grids, accuracy and AUC, with
  :mod:`~research.protocols.sdrogd_grid`, a whole grid in one pass), each with its ``*_cli`` options;
- :mod:`research.reference`: the readable transcriptions of the papers' updates that the fast
  kernels of :mod:`service.learners` are tested against;
- :mod:`research.cli`: the ``acog evaluate`` command line.

The data sets themselves (the registry, the LIBSVM, ``.mat`` and ESL readers) are the product's
(:mod:`service.datasets`): ``acog datasets``, ``acog replay`` and the examples read them too.
"""
