"""The ACOG paper's reproduction protocol on every shared data set, against the paper's figures.

Every number comes from :func:`research.protocols.online.evaluate`, driven by ``acog evaluate``
argument lists: each *job* is the exact command line (``acog evaluate ARGS``) that
the report prints, parsed by the real CLI parser (:func:`service.cli.build_parser`) and
turned into the same settings :func:`research.cli.run_evaluate` would build. So a
reader can re-run any table row with the command shown above it.

Protocol (``docs/learners.md``, section 7): 20 permutations (german.mat's own
``ID_ALL`` for german, ``--seed 0`` for every other data set), every example scaled to unit
L2 norm, no intercept, ``gamma = 1``, sketch size ``m = 5``. Sum runs use
``alpha_p = 0.5`` with rho = T_n / T_p from the true class counts, and again with the
online Laplace estimate (what the service uses); cost runs use ``c_p = 0.9`` (rho = 9).
``eta`` (COG's lambda), ``C`` (PA-I) and ``r`` (AROW) are picked from 1e-5 .. 1e5 by the
best mean, separately for each run.

Modules, in the order the data flows:

- :mod:`~bench.reproduction.plans`: what to run for each data set (the protocol's jobs);
- :mod:`~bench.reproduction.runs`: running a job as ``acog evaluate`` would, and the JSON cache;
- :mod:`~bench.reproduction.extras`: the further runs the "Misses explained" sections quote;
- :mod:`~bench.reproduction.paper`: the paper's figures, parsed from ``docs/paper-figures.md``;
- :mod:`~bench.reproduction.verdicts`: our cells against the paper's, by the stated rule;
- :mod:`~bench.reproduction.misses`: the missed rows and the first check that explains each;
- :mod:`~bench.reproduction.explanations`: the prose under "Misses explained";
- :mod:`~bench.reproduction.headerless_table`: the headerless table of ``docs/paper-figures.md``;
- :mod:`~bench.reproduction.tables` and :mod:`~bench.reproduction.report`: the markdown;
- :mod:`~bench.reproduction.cli`: ``python -m bench.reproduction``.
"""
