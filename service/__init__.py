"""acog-service: streaming anomaly detection with cost-sensitive online learning.

Layers (imports point down only):

- ``service.api``      FastAPI routers and pydantic schemas (HTTP and WebSocket)
- ``service.telemetry`` Prometheus collectors fed by the engine (an engine ``Observer``)
- ``service.engine``   the engine in parts (lifecycle, registry, model changes, predictor, label
  router) over one replica per model: learner + measures + ordering of updates
- ``service.learners`` pure maths, no I/O: a library of numpy, numba and scipy only
- ``service.client``   the Python client (httpx, websockets, pydantic; also its own distribution)
- ``service.jit_cache`` the kernels' numba decorator; each entry point configures its disk cache
- ``service.ws_protocol`` uvicorn's WebSocket protocol, the writes of one loop iteration as one
- ``service.measures`` running cost-sensitive measures
- ``service.features`` request bodies to vectors (dense, sparse, named)
- ``model_store``      every byte that leaves the process

The benchmarks (``bench``) and the tests sit above all of it and are never imported by it; the
contracts are ``[tool.importlinter]`` in pyproject.toml, checked by ``tests/test_imports.py``, and
docs/architecture.md draws the whole. Importing this package loads nothing else.
"""

__version__ = "0.1.0"
