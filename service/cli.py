"""The ``acog`` command: serve, warm-up, evaluate, datasets, replay, export-openapi, export-asyncapi.

Each subcommand's options are declared here; the work is done by the module that owns it,
imported lazily so that ``acog --help`` stays fast. ``--help`` shows every default; a value that
makes no sense (``--permutations 0``, a negative count) is refused while parsing, and a mistake the
user can make (a missing data set, an unknown algorithm, a bad ``ACOG_*`` setting, a Redis that does
not answer, a port in use) is one line on stderr and exit code 2, with no traceback
(:class:`service.cli_options.UsageError`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version
from typing import Any

from .cli_options import Command, HelpFormatter, Parser, UsageError, port, positive_int

EXIT_USAGE = 2
"""The exit code of a user's mistake, as argparse uses for a bad option."""

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
    from .blas import check_pin
    from .serve_checks import check_default_model, check_port, check_redis, load_settings

    if args.server == "granian":
        import importlib.util

        if args.workers != 1:
            raise UsageError("--workers takes --server uvicorn (Granian serves one process here)")
        if importlib.util.find_spec("granian") is None:
            raise UsageError(
                "--server granian: Granian is not installed (pip install 'acog-service[granian]')"
            )
    settings = load_settings()
    try:
        blas_cores = check_pin(args.blas_pin)
    except ValueError as exc:
        raise UsageError(f"ACOG_BLAS_CORE_TYPE: {exc}") from None
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    check_default_model(settings)
    check_port(host, port)
    check_redis(settings)
    pin_mmap_threshold()
    logging.config.dictConfig(LOGGING)
    cores = ", ".join(sorted(blas_cores))
    logging.getLogger("acog").info("BLAS core type: %s (%s)", cores, args.blas_pin.reason)
    options = {
        "host": host,
        "port": port,
        "log_level": "info",
        "access_log": False,
        "ws_max_size": 4 * settings.ws_max_message_bytes,
        "ws_per_message_deflate": settings.ws_compression,
        # uvicorn's sans-I/O WebSocket protocol, its replies of one loop iteration in one write
        "ws": "service.ws_protocol:CoalescingWebSockets",
        "timeout_graceful_shutdown": 20,
        "log_config": LOGGING,
    }
    if args.server == "granian":
        return _serve_granian(args, host, port)
    if args.workers == 1:
        from .api import create_app

        uvicorn.run(create_app(settings), **options)  # type: ignore[arg-type]
        return 0
    # N replica processes behind one port: each is a full replica of every model (its own engine,
    # following the logs), so they must share one store. Without a Redis URL, the embedded one is
    # started here, once, and the workers connect to it.
    from model_store import EmbeddedRedis

    from .telemetry import prepare_multiprocess_metrics

    if settings.warm_up == "all":
        # Compile into the kernel cache once, here, so that the workers load the kernels rather than
        # each compile them at once (N times the CPU, and N writers of one cache's index files). In a
        # child process: this supervising one never holds the machine code.
        import subprocess

        warmed = subprocess.run([sys.executable, "-m", "service.cli", "warm-up"], check=False)
        if warmed.returncode != 0:
            return warmed.returncode

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


def _serve_granian(args: argparse.Namespace, host: str, port: int) -> int:
    """One process under Granian (a Rust HTTP server), the app built by :mod:`service.worker` in
    Granian's worker. ``--workers`` stays uvicorn's: the multi-process set-up (one embedded Redis
    for all, metrics shared through files) is not wired for Granian's workers."""
    from granian.constants import HTTPModes, Interfaces
    from granian.server import Server

    Server(
        "service.worker:create_app",
        factory=True,
        address=host,
        port=port,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        workers=1,
        log_level="info",  # type: ignore[arg-type]
        log_dictconfig=LOGGING,
        workers_kill_timeout=20,
    ).serve()
    return 0


def _not_installed(args: argparse.Namespace) -> int:
    raise UsageError(
        f"this installation registers no `acog {args.command}` (an entry point of {COMMANDS_GROUP}, "
        "which the distribution declares): reinstall it, e.g. pip install -e ."
    )


def _datasets(args: argparse.Namespace) -> int:
    from .datasets.cli import run

    return run(args)


def _replay(args: argparse.Namespace) -> int:
    from .replay import run_replay

    return run_replay(args)


def export_document(name: str) -> str:
    """``"openapi"`` or ``"asyncapi"``: the document, generated from the code, as the YAML that
    ``acog export-openapi`` and ``acog export-asyncapi`` write (and the drift tests compare)."""
    import yaml

    generate: Callable[[], Mapping[str, Any]]
    if name == "openapi":
        from .openapi import document as generate
    else:
        from .asyncapi import document as generate
    return yaml.safe_dump(dict(generate()), sort_keys=False, allow_unicode=True, width=100)


def _export(args: argparse.Namespace) -> int:
    """``export-openapi`` and ``export-asyncapi``: the document ``args.document`` names, as YAML."""
    text = export_document(args.document)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as out:
            out.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _warm_up(args: argparse.Namespace) -> int:
    from .learners import InvalidParameter, warm_up

    names = [a.strip() for a in args.algorithms.split(",") if a.strip()] if args.algorithms else None
    try:
        done = warm_up(names)
    except InvalidParameter as exc:
        raise UsageError(f"--algorithms: {exc.problem}") from None
    print(f"acog warm-up: {done.summary()}")
    return 0


COMMANDS_GROUP = "acog.commands"
"""The entry-point group through which other packages add commands (:class:`Command` objects): the
product never imports them, they import the product."""

DISTRIBUTED = {"evaluate": "run a paper's evaluation protocol on a data set (research code)"}
"""The commands this distribution's own entry points add (``pyproject.toml``), named here only so
that an installation whose metadata predates one (an editable install not reinstalled) says so."""


def added_commands() -> dict[str, Command]:
    """The commands of the :data:`COMMANDS_GROUP` entry points, by name (the first of a name wins).
    One whose package is not installed is left out; any other failure to load it is raised."""
    found: dict[str, Command] = {}
    for point in entry_points(group=COMMANDS_GROUP):
        if point.name in found:
            continue
        try:
            loaded = point.load()
        except ModuleNotFoundError as exc:
            if exc.name is None or not (point.module + ".").startswith(exc.name + "."):
                raise  # the package is there, but something it imports is not
            continue
        if not isinstance(loaded, Command):
            raise TypeError(f"entry point {point.name} = {point.value} of {COMMANDS_GROUP} is not a Command")
        found[point.name] = loaded
    return found


def package_version() -> str:
    """The installed distribution's version (``pip install`` metadata), else the source's."""
    try:
        return version("acog-service")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="acog",
        description="Streaming anomaly detection with cost-sensitive second-order online learning.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = sub.add_parser(name, formatter_class=HelpFormatter, **kwargs)
        return made

    serve = command(
        "serve",
        help="run the HTTP/WebSocket service (uvicorn, or Granian)",
        description="Serve the API. It answers once every model is recovered and the kernels are "
        "compiled or loaded from the kernel cache (ACOG_WARM_UP; `acog warm-up` fills the cache ahead).",
    )
    serve.add_argument("--host", default=None, help="bind address (default: $ACOG_HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=port, default=None, help="port (default: $ACOG_PORT, else 8000)")
    serve.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="replica processes behind the one port, each following every model's log",
    )
    serve.add_argument(
        "--server",
        choices=("uvicorn", "granian"),
        default="uvicorn",
        help="the HTTP server: uvicorn (the default), or Granian (pip install 'acog-service[granian]'; "
        "one process: --workers is uvicorn's)",
    )
    serve.set_defaults(func=_serve)

    warm = command(
        "warm-up",
        help="compile every kernel into the kernel cache, so that the service starts warm",
        description="Compile (or load) the numba kernels of every algorithm, or of those named, into "
        "the kernel cache: $ACOG_JIT_CACHE_DIR, else $NUMBA_CACHE_DIR, else ~/.cache/acog-service/numba, "
        "under a digest of the kernels' source. `acog serve` then loads them instead of compiling.",
    )
    warm.add_argument(
        "--algorithms",
        default=None,
        help="a comma list such as acog,ssacog (default: every algorithm)",
    )
    warm.set_defaults(func=_warm_up)

    added = added_commands()
    for name, added_command in added.items():
        made = command(name, help=added_command.help, description=added_command.description)
        added_command.add_arguments(made)
        made.set_defaults(func=added_command.run)
    for name, what in DISTRIBUTED.items():
        if name not in added:  # metadata older than the entry point: say how to get it
            # no option prefix: every argument (--help too) is taken as is, and the command says why
            stub = command(
                name, help=f"{what}; not registered here: reinstall", add_help=False, prefix_chars="\x1f"
            )
            stub.add_argument("arguments", nargs="*")
            stub.set_defaults(func=_not_installed)

    datasets = command(
        "datasets",
        help="list the public data sets, or fetch them into the cache",
        description="The data sets the evaluation, benchmarks, examples and tests read: each file's "
        "source, size, sha256 and licence. They are read from $ACOG_DATASETS_DIR (a mirror) if set, "
        "else from the cache `acog datasets fetch` fills.",
    )
    from .datasets.cli import add_arguments as datasets_arguments

    datasets_arguments(datasets)
    datasets.set_defaults(func=_datasets)

    replay = command(
        "replay",
        help="send a data set through a running service as live traffic",
        description="Predict each example now and send its label --delay seconds later, "
        "with bounded counts (--limit) and pacing (--rate).",
    )
    from .replay import add_arguments as replay_arguments

    replay_arguments(replay)
    replay.set_defaults(func=_replay)

    for document, what in (("openapi", "the service's OpenAPI"), ("asyncapi", "the WebSocket's AsyncAPI")):
        export = command(f"export-{document}", help=f"write {what} document as YAML")
        export.add_argument(
            "--output", "-o", default=f"{document}.yaml", help='file to write, or "-" for stdout'
        )
        export.set_defaults(func=_export, document=document)
    return parser


USER_ERRORS: tuple[type[Exception], ...] = (
    UsageError,
    FileNotFoundError,
    NotADirectoryError,
    PermissionError,
)
"""Errors a user causes and can fix: printed as one line, exit code 2."""


def main(argv: Sequence[str] | None = None) -> int:
    from .blas import pin_blas_core

    arguments = sys.argv[1:] if argv is None else list(argv)
    # the serving processes' OpenBLAS kernels, before anything (jit_cache, the parser) loads numpy
    pin = pin_blas_core() if arguments[:1] == ["serve"] else None
    from . import jit_cache

    jit_cache.configure()  # the process owns the cache; before anything (the parser too) imports the learners
    args = build_parser().parse_args(arguments)
    args.blas_pin = pin
    try:
        result: int = args.func(args)
    except USER_ERRORS as exc:
        message = str(exc)
        if isinstance(exc, OSError) and exc.filename is not None:
            message = f"{exc.filename}: {exc.strerror}"
        print(f"acog {args.command}: error: {' '.join(message.split())}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # raise SystemExit("message"): a refusal worded by the command
        if not isinstance(exc.code, str):
            raise
        print(f"acog {args.command}: error: {' '.join(exc.code.split())}", file=sys.stderr)
        return EXIT_USAGE
    return result


if __name__ == "__main__":
    sys.exit(main())
