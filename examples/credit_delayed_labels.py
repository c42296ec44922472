"""Credit risk with late labels: score every application at once, learn whether it defaulted later.

German credit (the ``german`` data set: ``acog datasets fetch german``, or a mirror named by
``ACOG_DATASETS_DIR``; 1,000 applications, 24 features, 300 of them bad
credit = the positive class) is the classic cost-sensitive case: approving a bad borrower costs
the lender about five times what refusing a good one does. So the model optimises the
*cost* objective with ``c_p = 5/6`` (``c_p / c_n = 5``).

The walk-through, all with ``service.client``:

1. create the model (``PUT /models/credit``);
2. applications arrive in groups of 50 and are scored over the WebSocket, pipelined;
3. whether a loan went bad is known only ``--lag`` applications later: those outcomes go back
   to the service late, in batches (``POST /feedback``); one is sent twice, as a retry after a
   timeout would, and counts once;
4. read the model's measures and compare its cost with the two policies that need no model.

Run a service first (``acog serve``), then::

    python examples/credit_delayed_labels.py http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import deque

from service.client import Client, FeedbackResult, Prediction
from service.datasets import DatasetUnavailable, load

MODEL = "credit"
C_P = 5 / 6  # a missed bad loan costs 5, a refused good one 1: c_p / c_n = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000")
    parser.add_argument("--lag", type=int, default=100, help="applications before an outcome is known")
    parser.add_argument("--api-key", default=os.environ.get("ACOG_API_KEY"))
    parser.add_argument("--datasets-dir", default=None)
    args = parser.parse_args(argv)

    try:
        data = load("german", datasets_dir=args.datasets_dir)
    except DatasetUnavailable as exc:  # one line saying how to get it, exit code 2
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    assert data.permutations is not None
    order = data.permutations[0]  # the applications in the order of german.mat's first permutation
    rows, outcomes = data.X[order].toarray(), [int(v) for v in data.y[order]]

    with Client(args.url, api_key=args.api_key) as client:
        client.wait_ready()
        # 1. the model: ACOG with the service's defaults, optimising the cost of mistakes
        model = client.put_model(
            MODEL, {"n_features": rows.shape[1], "objective": "cost", "c_p": C_P}, replace=True
        )
        print(f"model {model.name!r}: {model.config['algorithm']}, cost objective, rho = {model.rho_mode}")

        # 2-3. score applications as they come; outcomes follow --lag applications behind
        waiting: deque[tuple[Prediction, int]] = deque()
        labelled: list[FeedbackResult] = []
        with client.stream(window=32) as stream:
            for start in range(0, len(rows), 50):
                predictions = stream.predict_many(list(rows[start : start + 50]), model=MODEL)
                waiting.extend(zip(predictions, outcomes[start : start + 50], strict=True))
                known = [waiting.popleft() for _ in range(max(0, len(waiting) - args.lag))]
                if known:
                    labelled += client.feedback_batch(known)
        labelled += client.feedback_batch(list(waiting))  # the last outcomes, at the end
        applied = sum(r.applied for r in labelled)
        print(f"scored {len(rows)} applications over the WebSocket; {applied} outcomes learned, "
              f"each {args.lag} applications late")  # fmt: skip

        again = client.feedback(labelled[0].prediction_id, outcomes[0])  # a retry: counts once
        info = client.get_model(MODEL)
        print(f"an outcome sent twice counts once: duplicate={again.duplicate}, model version {info.version}")

        # 4. the measures, against the policies that need no model
        m = info.measures
        approve_all, refuse_all = C_P * m["t_p"], (1 - C_P) * m["t_n"]
        print(f"missed bad loans {m['m_p']} of {m['t_p']}, refused good ones {m['m_n']} of {m['t_n']}: "
              f"sensitivity {m['sensitivity']:.3f}, specificity {m['specificity']:.3f}")  # fmt: skip
        print(f"cost c_p M_p + c_n M_n: the model {m['weighted_cost']:.1f}, approving everyone "
              f"{approve_all:.1f}, refusing everyone {refuse_all:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
