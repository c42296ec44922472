"""Learning quality: the service's defaults, every learner and the peers, on one protocol.

    .venv/bin/python -m bench.quality                       # every data set; writes docs/benchmarks.md
    .venv/bin/python -m bench.quality path/to/file.svm      # any LIBSVM file (prints only)
    .venv/bin/python -m bench.quality --study               # the defaults study, ours only
    .venv/bin/python -m bench.quality --render-only         # rewrite the section from the JSON cache

Protocol, the same for every system (``docs/learners.md`` section 7):

- the data set's rows in seeded permutations (``numpy.random.default_rng(0)``, the first
  ``--permutations`` it draws; ``--small-permutations`` for data sets of at most
  ``SMALL_ROWS`` rows, which are noisy and cheap), the same orders for every system;
- every example scaled to unit L2 norm (:func:`service.datasets.l2_normalize`, the kernel
  the service applies to requests), before any system sees it;
- predict, then learn the true label at once (progressive validation);
- **sum** runs (``alpha_p = alpha_n = 0.5``) and **cost** runs (``c_p = 0.9, c_n = 0.1``),
  each system configured for the measure it is judged on.

Systems:

- *ours, service defaults*: built by ``ModelConfig(n_features=d, objective=..., [algorithm,
  loss]).build_learner()``, so exactly what a client of ``PUT /models`` gets: ``eta="auto"``,
  intercept, rho = the online Laplace estimate for sum and ``c_p / c_n = 9`` for cost. The
  ``defaults`` row sets nothing but the objective (it resolves to ACOG-II on every data set
  here); the ACOG-I/II (full, diag), SSACOG-I/II and COG-II rows set only the algorithm and loss.
- *ours, create() defaults*: every learner of :data:`service.learners.ALGORITHMS` with its
  ``create()`` defaults (``eta = 1``, no sweep, no intercept) and ``rho = "laplace"`` for sum,
  ``rho = 9`` for cost.
- *peers* (:mod:`bench.peers`): river PA, ALMA, Perceptron and LogisticRegression, VW plain and
  ``--OjaNewton``, with quadratic interactions (``-q ::``) and its neural network (``--nn 10``),
  scikit-learn ``SGDClassifier.partial_fit`` (hinge) one row at a time. Their
  positive-class weight is ``rho = T_n / T_p`` of the whole data set for sum runs (the true
  ratio: hindsight knowledge our learners do not get, they estimate it online), ``9`` for cost
  runs; PA and ALMA take no weight (one run serves both measures). scikit-learn costs ~0.6 ms
  a row, so it runs on the first ``--sklearn-permutations`` orders only.
- *hindsight references* (not online): ACOG-II with ``eta`` picked per data set and measure by
  the best mean over the paper's grid ``1e-5 .. 1e5``, (a) with the paper's protocol (no
  intercept; rho = T_n / T_p for sum, 9 for cost) and (b) with the defaults' configuration
  (intercept, Laplace rho); and the paper's printed ACOG-II figures where the paper has the
  data set (other permutations, so within its spread only).

Cost is ``c_p M_p + c_n M_n`` (raw weighted mistakes) and per 1000 examples; the summary
averages the per-1000 figure (raw costs scale with the data set's size) and the ranks.
Results are cached per data set as JSON (``--results-dir``), so ``--render-only`` can rewrite
the report without running anything.

Modules: :mod:`~bench.quality.cli` (the command line), :mod:`~bench.quality.protocol` (data
sets, measures, row orders), :mod:`~bench.quality.systems` (the rows compared),
:mod:`~bench.quality.runs` (running them, the JSON cache), :mod:`~bench.quality.cells` (measures
from the cached counts), :mod:`~bench.quality.paper` (the paper's figures),
:mod:`~bench.quality.summary`, :mod:`~bench.quality.tables` and :mod:`~bench.quality.section`
(the markdown), and the defaults study: :mod:`~bench.quality.candidates`,
:mod:`~bench.quality.selection`, :mod:`~bench.quality.study`, :mod:`~bench.quality.study_section`.
"""
