"""The `toolserver index` command: build an index from a JSONL corpus, build the default
index, list the indexes of a data directory. It works on files only, never on a server."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from toolserver.search.corpus import CorpusError, read_corpus
from toolserver.search.executor import ensure_default_index
from toolserver.search.index import IndexProblem, Manifest, build_index, list_indexes, load_encoder
from toolserver.search.settings import MODES, SearchSettings, check_index_name

DEFAULTS = SearchSettings()


def add_index_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `index build|default|list` to a parser's subcommands."""
    index = subparsers.add_parser("index", help="build and list search indexes")
    index.set_defaults(run=run_index_command)
    commands = index.add_subparsers(dest="index_command", required=True)

    build = commands.add_parser("build", help="build an index from a JSONL corpus")
    build.add_argument("--name", required=True, type=_index_name, help="index name (a directory name)")
    build.add_argument("--input", required=True, type=Path,
                       help="JSONL: {id, title, text} or {id, contents} (Search-R1 / wiki-18) a line")
    build.add_argument("--dense", action="store_true",
                       help="also embed every document with the packaged sentence model (hybrid search)")
    build.add_argument("--mode", choices=MODES,
                       help="how queries are answered (default: hybrid with --dense, else bm25)")
    build.add_argument("--description", default="", help="what the index holds, shown to callers in ListTools")

    default = commands.add_parser("default", help="build the default index from module documentation if missing")
    for command in (build, default):
        command.add_argument("--data-dir", default=DEFAULTS.data_dir)
        command.add_argument("--force", action="store_true", help="replace an existing index")

    listing = commands.add_parser("list", help="list the indexes of a data directory")
    listing.add_argument("--data-dir", default=DEFAULTS.data_dir)


def _index_name(value: str) -> str:
    try:
        return check_index_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _size(path: Path) -> str:
    total = sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
    return f"{total / 2**20:.1f} MB"


def _build(args: argparse.Namespace) -> Manifest:
    mode = args.mode or ("hybrid" if args.dense else "bm25")
    encoder = None
    if mode != "bm25":
        encoder = load_encoder(DEFAULTS.dense_model, DEFAULTS.torch_threads)
    return build_index(read_corpus(args.input), args.data_dir, args.name, mode=mode,
                       description=args.description, source=str(args.input.resolve()), encoder=encoder,
                       batch_size=DEFAULTS.dense_batch_size, force=args.force, progress=sys.stderr.isatty())


def run_index_command(args: argparse.Namespace) -> int:
    """Runs `toolserver index ...`; 0 on success, 2 with a one-line error on stderr."""
    try:
        if args.index_command == "list":
            manifests = list_indexes(args.data_dir)
            if not manifests:
                print(f"no indexes in {args.data_dir}")
            for manifest in manifests:
                path = Path(args.data_dir) / manifest.name
                print(f"{manifest.name:<20} {manifest.documents:>9} docs  {manifest.mode:<6}  {_size(path):>9}  "
                      f"built {manifest.built}  {manifest.description}")
            return 0
        if args.index_command == "default":
            settings = dataclasses.replace(DEFAULTS, data_dir=str(Path(args.data_dir).resolve()))
            path = ensure_default_index(settings, force=args.force, progress=sys.stderr.isatty())
            manifest = Manifest.read(path)
        else:
            manifest = _build(args)
    except (CorpusError, IndexProblem, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"index {manifest.name} ready in {Path(args.data_dir) / manifest.name}: {manifest.documents} documents "
          f"({manifest.mode}), built {manifest.built} in {manifest.build_s:.1f} s")
    return 0
