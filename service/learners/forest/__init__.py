"""The Aggregated Mondrian Forest (Mourtada, Gaïffas & Scornet, JRSS-B 2021) as an online learner.

- :mod:`.rng`: the counter-based random stream the trees draw from (its state is learner state);
- :mod:`.kernels`: the numba kernels over the trees' parallel node arrays (predict, learn);
- :mod:`.learner`: :class:`AMF`, the learner behind the contract (``algorithm="amf"``);
- :mod:`research.reference.forest` (outside the product): the readable pure-Python forest the
  kernels are tested against.
"""
