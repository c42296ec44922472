"""``acog datasets``: list the registered data sets, and fetch their files into the download cache."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_options import UsageError
from .fetch import DATASETS_ENV, DatasetUnavailable, cache_dir, default_datasets_dir, fetch, verify
from .registry import REGISTRY, files_of
from .sources import FILES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="datasets_command", required=True, metavar="ACTION")
    listing = sub.add_parser("list", help="each data set, its files, size, licence, and whether it is here")
    listing.set_defaults(datasets_func=run_list)
    get = sub.add_parser(
        "fetch",
        help="download data set files into the cache, checking each one's sha256",
        description="Download the files of the data sets named (default: every file of every data set) "
        "into the cache ($ACOG_DATASETS_CACHE, else ~/.cache/acog-service/datasets), each checked "
        "against its sha256 before it is stored. Files already there are kept. Without internet "
        "access, copy the files from a mirror instead and point $ACOG_DATASETS_DIR at it.",
    )
    get.add_argument("names", nargs="*", metavar="NAME", help="data sets, e.g. german a9a (default: all)")
    get.add_argument("--dir", type=Path, default=None, help="store here instead of the cache")
    get.add_argument(
        "--from",
        dest="base_url",
        default=None,
        help="a web server laid out like the cache (http://host/path/), instead of each file's source",
    )
    get.set_defaults(datasets_func=run_fetch)


def run(args: argparse.Namespace) -> int:
    code: int = args.datasets_func(args)
    return code


def run_list(args: argparse.Namespace) -> int:
    try:
        root = default_datasets_dir()
    except DatasetUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(f"data set directory: {root}")
    for name, spec in REGISTRY.items():
        here = all((root / f).is_file() for f in spec.files)
        size = sum(FILES[f].size for f in spec.files)
        print(f"{name:12s} {'here' if here else 'absent':6s} {size / 1e6:6.2f} MB  {spec.description}")
        for f in spec.files:
            print(f"{'':12s}   {f}: {FILES[f].licence}; {FILES[f].url}")
    return 0


def run_fetch(args: argparse.Namespace) -> int:
    try:
        paths = list(FILES) if not args.names else files_of(args.names)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    root = args.dir if args.dir is not None else cache_dir()
    try:
        written = fetch(paths, root, args.base_url)
    except DatasetUnavailable as exc:
        raise UsageError(str(exc)) from None
    bad = [p for p in paths if not verify(root / p, FILES[p])]
    if bad:
        raise UsageError(f"{', '.join(bad)} in {root} do not match their sha256; delete them and fetch again")
    print(f"acog datasets: {len(written)} file(s) downloaded, {len(paths)} present and verified in {root}")
    if args.dir is None:
        print(f"(read from there unless ${DATASETS_ENV} names a mirror)")
    return 0
