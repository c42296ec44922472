"""The README's Python session: run the client against a real service and print the transcript.

    python examples/readme_session.py                  # print it
    python examples/readme_session.py --write README.md  # rewrite the README's client-session block

Starts ``acog serve`` on a free port with its embedded store in a temporary folder, then runs
:data:`SESSION` statement by statement as an interactive interpreter would, printing each
statement and what it shows. The transcript names the service as ``http://127.0.0.1:8000`` (the
default address) although this run's port differs; prediction ids and delays differ on every run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from service.client import Client

ROOT = Path(__file__).resolve().parents[1]
SHOWN_URL = "http://127.0.0.1:8000"
SESSION = [  # one top-level statement each, as typed at the prompt
    "from service.client import Client, InvalidRequest, Sparse",
    f'client = Client("{SHOWN_URL}", model="cards")',
    'client.put_model("cards", {"n_features": 4, "objective": "cost", "c_p": 0.9}).rho_mode',
    "p = client.predict([0.2, 0.1, 0.0, 0.9])",
    "p",
    "client.feedback(p, -1)",
    "client.feedback(p, -1).duplicate  # a retry counts once",
    "batch = client.predict_batch([[3.0, 0.1, 2.2, 0.0], Sparse(indices=[1, 3], values=[0.4, 1.0])])",
    "[(q.label, q.score) for q in batch]",
    "[r.model_version for r in client.feedback_batch([(batch[0], 1), (batch[1], -1)])]",
    'try:\n    client.predict([1, 2, float("nan"), 4])\n'
    "except InvalidRequest as refused:\n    print(refused.status, refused.field, refused.message)",
    "with client.stream() as stream:  # the WebSocket: pipelined, answers matched by id\n"
    "    answers = stream.predict_many([[0.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0]])",
    "[(q.label, q.score) for q in answers]",
    'm = client.get_model("cards").measures',
    '{k: m[k] for k in ("t_p", "t_n", "m_p", "m_n", "weighted_cost")}',
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(statement: str, namespace: dict[str, Any]) -> str:
    """Run one statement as the interactive interpreter would: an expression's value is shown."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = compile(statement, "<session>", "eval")
        except SyntaxError:
            exec(compile(statement, "<session>", "exec"), namespace)
        else:
            value = eval(code, namespace)
            if value is not None:
                print(repr(value))
    return out.getvalue()


def prompted(statement: str) -> list[str]:
    """The statement as typed: ``>>> `` first, ``... `` after, and a closing ``...`` for a block."""
    lines = statement.splitlines()
    shown = [">>> " + lines[0], *("... " + line for line in lines[1:])]
    return [*shown, "..."] if len(lines) > 1 else shown


def transcript(url: str) -> str:
    namespace: dict[str, Any] = {}
    lines = []
    for statement in SESSION:
        lines += prompted(statement)
        lines += run(statement.replace(SHOWN_URL, url), namespace).rstrip("\n").splitlines()
    namespace["client"].close()
    return "```pycon\n" + "\n".join(lines) + "\n```"


@contextlib.contextmanager
def serving(ready_within: float = 300) -> Iterator[int]:
    """``acog serve`` on a free port with its embedded store in a temporary folder, ready; its port."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        env = {**os.environ, "ACOG_DATA_DIR": data, "ACOG_PORT": str(port)}
        env.pop("ACOG_REDIS_URL", None)
        server = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve"], env=env, cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            with Client(f"http://127.0.0.1:{port}") as probe:
                probe.wait_ready(ready_within)
            yield port
        finally:
            server.terminate()
            server.wait(30)


def publish(text: str, readme: str | None, block: str) -> None:
    """Print the transcript; with ``readme``, write it into that file's ``block``."""
    print(text)
    if readme:
        sys.path.insert(0, str(ROOT))
        from bench.report import write_section

        write_section(readme, block, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", default=None, help="rewrite the client-session block of this file")
    args = parser.parse_args(argv)
    with serving() as port:
        text = transcript(f"http://127.0.0.1:{port}")
    publish(text, args.write, "client-session")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
