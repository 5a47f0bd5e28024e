"""Command line: ``python -m llmviz corpus list | train … | sample …``."""

from __future__ import annotations

import argparse
import sys

from llmviz.errors import LlmvizError


def _format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def cmd_corpus_list(args: argparse.Namespace) -> int:
    from llmviz import corpus

    rows = []
    for entry in corpus.list_corpora():
        available = not entry.downloadable or corpus.is_cached(entry.name)
        if available:
            s = corpus.stats(corpus.load(entry.name, download_if_missing=False))
            numbers = [f"{s.characters:,}", f"{s.words:,}", f"{s.distinct_characters:,}"]
            where = "built in" if not entry.downloadable else "cached"
        else:
            numbers = ["-", "-", "-"]
            where = "download on first use"
        rows.append([entry.name, *numbers, where, entry.licence])
    print(_format_table(["name", "characters", "words", "distinct chars", "availability", "licence"], rows))
    return 0


def cmd_corpus_download(args: argparse.Namespace) -> int:
    from llmviz import corpus

    path = corpus.download(args.name)
    print(f"saved {path}")
    return 0


def build_parser(prog: str = "llmviz") -> argparse.ArgumentParser:
    """The whole command line; ``prog`` is how the user called it (``llmviz`` or ``python -m llmviz``)."""
    parser = argparse.ArgumentParser(prog=prog, description="llmviz command line")
    commands = parser.add_subparsers(dest="command", required=True)

    corpus_parser = commands.add_parser("corpus", help="list or download text corpora")
    corpus_commands = corpus_parser.add_subparsers(dest="corpus_command", required=True)
    corpus_commands.add_parser("list", help="print the corpus table").set_defaults(func=cmd_corpus_list)
    download = corpus_commands.add_parser("download", help="download a corpus into the cache")
    download.add_argument("name")
    download.set_defaults(func=cmd_corpus_download)

    from llmviz.train_cli import add_train_commands  # a broken import must fail loudly, not hide commands

    add_train_commands(commands)
    return parser


def main(argv: list[str] | None = None, prog: str = "llmviz") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except LlmvizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
