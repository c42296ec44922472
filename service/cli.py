"""The ``acog`` command: serve, evaluate, replay, export-openapi, export-asyncapi.

Each subcommand's options are declared here; the work is done by the module that owns it,
imported lazily so that ``acog --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "service": {"format": "%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": "service", "stream": "ext://sys.stderr"}
    },
    "loggers": {
        "acog": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
    },
}
"""The service's log format, for the serving process and every worker (uvicorn applies it in each)."""


def _serve(args: argparse.Namespace) -> int:
    import logging.config
    import os

    import uvicorn

    from .allocator import pin_mmap_threshold
    from .settings import Settings

    settings = Settings()
    pin_mmap_threshold()
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    logging.config.dictConfig(LOGGING)
    options = {
        "host": host,
        "port": port,
        "log_level": "info",
        "access_log": False,
        "ws_max_size": 4 * settings.ws_max_message_bytes,
        "timeout_graceful_shutdown": 20,
        "log_config": LOGGING,
    }
    if args.workers == 1:
        from .api import create_app

        uvicorn.run(create_app(settings), **options)  # type: ignore[arg-type]
        return 0
    # N replica processes behind one port: each is a full replica of every model (its own engine,
    # following the logs), so they must share one store. Without a Redis URL, the embedded one is
    # started here, once, and the workers connect to it.
    from model_store import EmbeddedRedis

    from .telemetry import prepare_multiprocess_metrics

    embedded = None
    if not settings.redis_url:
        embedded = EmbeddedRedis(settings.data_dir)
        os.environ["ACOG_REDIS_URL"] = embedded.url
        logging.getLogger("acog").info("embedded Redis at %s for %d workers", embedded.url, args.workers)
    prepare_multiprocess_metrics()
    try:
        uvicorn.run("service.worker:create_app", factory=True, workers=args.workers, **options)  # type: ignore[arg-type]
    finally:
        if embedded is not None:
            embedded.close()
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluation.cli import run_evaluate

    return run_evaluate(args)


def _replay(args: argparse.Namespace) -> int:
    from .replay import run_replay

    return run_replay(args)


def _export_openapi(args: argparse.Namespace) -> int:
    from .openapi import export

    text = export()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as out:
            out.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _export_asyncapi(args: argparse.Namespace) -> int:
    from .asyncapi import export

    text = export()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as out:
            out.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acog",
        description="Streaming anomaly detection with cost-sensitive second-order online learning.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the HTTP/WebSocket service (uvicorn)")
    serve.add_argument("--host", default=None, help="bind address (default: ACOG_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default: ACOG_PORT or 8000)")
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="replica processes behind the one port, each following every model's log (default: 1)",
    )
    serve.set_defaults(func=_serve)

    evaluate = sub.add_parser(
        "evaluate",
        help="replay a data set through the learners (the paper's protocol)",
        description="Replay a data set as a stream (predict, then learn every label at once) over "
        "several permutations and print the paper's columns, mean ± sample std.",
    )
    from .evaluation.cli import add_arguments

    add_arguments(evaluate)
    evaluate.set_defaults(func=_evaluate)

    replay = sub.add_parser(
        "replay",
        help="send a data set through a running service as live traffic",
        description="Predict each example now and send its label --delay seconds later, "
        "with bounded counts (--limit) and pacing (--rate).",
    )
    from .replay import add_arguments as replay_arguments

    replay_arguments(replay)
    replay.set_defaults(func=_replay)

    export = sub.add_parser("export-openapi", help="write the service's OpenAPI document as YAML")
    export.add_argument("--output", "-o", default="openapi.yaml", help='file to write, or "-" for stdout')
    export.set_defaults(func=_export_openapi)

    asyncapi = sub.add_parser("export-asyncapi", help="write the WebSocket's AsyncAPI document as YAML")
    asyncapi.add_argument("--output", "-o", default="asyncapi.yaml", help='file to write, or "-" for stdout')
    asyncapi.set_defaults(func=_export_asyncapi)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from . import jit_cache

    jit_cache.configure()  # the process owns the cache; before anything (the parser too) imports the learners
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
