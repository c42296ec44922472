"""The readable reference implementations: each paper's update written as a pure function on
dense vectors, for reading, not speed. The fast kernels of :mod:`service.learners` are tested
against them (``tests/learners``); when the two disagree, the reference is right.

- :mod:`~research.reference.steps`: one step per registered algorithm (its ``STEPS``), the
  linear learners of the ACOG paper written out, the others delegated to:
- :mod:`~research.reference.sdrogd` (SDROGD and Pegasos), :mod:`~research.reference.nonlinear`
  (the nonlinear members), :mod:`~research.reference.forest` (the Aggregated Mondrian Forest) and
  :mod:`~research.reference.oli2ds` (OLI2DS, tested on its own).

OPID's reference (:mod:`service.learners.opid.reference`) stays in the product: the ``opid``
learner runs its solves.
"""
