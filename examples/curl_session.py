"""The README's curl session: run it against a real service and print the transcript.

    python examples/curl_session.py                  # print it
    python examples/curl_session.py --write README.md  # rewrite the README's session block

Starts ``acog serve`` on a free port with its embedded store in a temporary folder, then runs
:data:`COMMANDS` in bash one by one, each with the prediction ids the earlier replies gave. The
transcript names the service as ``localhost:8000`` (the default address) although this run's port
differs; prediction ids and delays differ on every run.
"""

from __future__ import annotations

import argparse
import json
import subprocess

from readme_session import publish, serving

SHOWN = "localhost:8000"
JSON = "-H 'Content-Type: application/json'"
COMMANDS = [
    f"curl -s -X PUT {SHOWN}/models/cards {JSON} "
    """-d '{"n_features": 4, "objective": "cost", "c_p": 0.9}' | python3 -c 'import json,sys; """
    """m=json.load(sys.stdin); print({k: m[k] for k in ("name","generation","status","rho_mode")}, """
    """m["config"]["algorithm"])'""",
    f"""curl -s {SHOWN}/predict {JSON} -d '{{"model": "cards", "features": [0.2, 0.1, 0.0, 0.9]}}'""",
    f"""curl -s {SHOWN}/feedback {JSON} -d '{{"prediction_id": "{{p0}}", "label": -1}}'""",
    f"""curl -s {SHOWN}/feedback {JSON} -d '{{"prediction_id": "{{p0}}", "label": -1}}'""",
    f"""curl -s {SHOWN}/predict {JSON} -d '{{"model": "cards", "instances": [[3.0, 0.1, 2.2, 0.0], """
    """{"indices": [1, 3], "values": [0.4, 1.0]}]}'""",
    f"""curl -s {SHOWN}/feedback {JSON} -d '{{"items": [{{"prediction_id": "{{p1}}", "label": 1}}, """
    """{"prediction_id": "{p2}", "label": -1}]}'""",
    f"""curl -s {SHOWN}/predict {JSON} -d '{{"model": "cards", "features": [1, 2, NaN, 4]}}'""",
    f"""curl -s {SHOWN}/models/cards | python3 -c 'import json,sys; s=json.load(sys.stdin)["state"]; """
    """print(s["version"], s["measures"], s["eta"]["selected"])'""",
    f"curl -s {SHOWN}/metrics | grep -E '^acog_(weighted_cost|labels_total|rho)\\{{'",
]


def fill(command: str, ids: list[str]) -> str:
    """``{p0}``, ``{p1}``, ... replaced by the prediction ids answered so far."""
    for i, pid in enumerate(ids):
        command = command.replace(f"{{p{i}}}", pid)
    return command.replace("{{", "{").replace("}}", "}")


def transcript(port: int) -> str:
    ids: list[str] = []
    lines = []
    for template in COMMANDS:
        shown = fill(template, ids)
        done = subprocess.run(
            ["bash", "-c", shown.replace(SHOWN, f"127.0.0.1:{port}")],
            capture_output=True,
            text=True,
            check=True,
        )
        output = done.stdout.rstrip("\n")
        if output.startswith('{"'):  # a JSON reply (the python3 -c lines print dicts)
            reply = json.loads(output)
            ids += [
                p["prediction_id"] for p in reply.get("predictions", [reply]) if "label" in p and "score" in p
            ]
        lines += [f"$ {shown}", output, ""]
    return "```console\n" + "\n".join(lines[:-1]) + "\n```"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", default=None, help="rewrite the session block of this file")
    args = parser.parse_args(argv)
    with serving() as port:
        text = transcript(port)
    publish(text, args.write, "session")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
