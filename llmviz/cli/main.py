"""Command line: ``python -m llmviz corpus list | tokenize … | train … | sample … | lora … | finetune … |
quantize … | interpret …``."""

from __future__ import annotations

import argparse
import logging
import sys

from llmviz import settings
from llmviz.errors import LlmvizError, UploadError, configure_logging


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line on stderr (exit status 2), not the usage block then the error."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def cmd_corpus_list(args: argparse.Namespace) -> int:
    from llmviz.data import corpus

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
    from llmviz.data import corpus

    path = corpus.download(args.name)
    print(f"saved {path}")
    return 0


def load_tokenizer(name: str, text: str, corpus_name: str | None = None):
    """The tokenizer ``python -m llmviz tokenize --tokenizer NAME`` means.

    ``gpt2`` and ``cl100k`` are the reference encodings; ``char`` is one id per character of
    ``--corpus`` (or of the text itself); anything else is a path: a tokenizer JSON file (the
    Tokens page's download, or :meth:`BPETokenizer.save`) or a checkpoint folder/``checkpoint.json``.
    """
    import os
    from pathlib import Path

    from llmviz.tokenizers import base, char_word, saved
    from llmviz.tokenizers.bpe import reference

    if name in ("gpt2", "cl100k"):
        return reference.reference_tokenizer(name)
    if name == "char":
        if corpus_name is not None:
            from llmviz.data import corpus

            return char_word.CharTokenizer.train(corpus.load(corpus_name))
        return char_word.CharTokenizer.train(text)
    path = Path(name)
    if path.is_dir():
        path = path / "checkpoint.json"
    if not os.path.lexists(path):
        if path.suffix.lower() == ".json" or len(path.parts) > 1:  # meant as a file: say that it is missing
            what = "checkpoint folder without a checkpoint.json" if path.name == "checkpoint.json" else "file"
            raise base.TokenizerError(
                f"No tokenizer {what} at {name}: check the path (a BPE saved from the Tokens page is a .json file; "
                "a checkpoint is a folder such as data/gpt-python-docs)."
            )
        raise base.TokenizerError(
            f"Unknown tokenizer {name!r}: use char, gpt2, cl100k, a tokenizer JSON file or a checkpoint folder."
        )
    from llmviz.errors import CheckpointError
    from llmviz.training.checkpoint import MAX_META_BYTES, _read_regular_file, parse_description

    try:  # regular files only, bounded in size and nesting: never a device, a pipe or a 200,000-level JSON
        data = parse_description(_read_regular_file(path, MAX_META_BYTES), path.name)
    except CheckpointError as error:
        raise base.TokenizerError(f"Cannot read tokenizer file {name}: {error}") from None
    if "tokenizer" in data and isinstance(data["tokenizer"], dict):  # an llmviz checkpoint
        data = data["tokenizer"]
    if data.get("type") not in ("char", "reference", "byte-bpe"):
        raise base.TokenizerError(f"{path} is not a tokenizer file (no known 'type').")
    return saved.tokenizer_from_dict(data)


MAX_TOKENIZE_BYTES = 32 * 2**20  #: the largest text ``tokenize --file`` reads (its table would be millions of lines)


def _read_input(name: str) -> bytes:
    """The bytes of ``--file``: standard input (``-``) or a regular file, at most :data:`MAX_TOKENIZE_BYTES`
    (a FIFO, a device or an endless stream is refused, never waited on or read until memory runs out)."""
    from llmviz.data.corpus import read_regular_file

    if name != "-":
        return read_regular_file(name, MAX_TOKENIZE_BYTES)
    data = sys.stdin.buffer.read(MAX_TOKENIZE_BYTES + 1)
    if len(data) > MAX_TOKENIZE_BYTES:
        raise UploadError(f"Standard input holds more than {MAX_TOKENIZE_BYTES // 2**20} MB: the limit is that.")
    return data


def cmd_tokenize(args: argparse.Namespace) -> int:
    import json

    from llmviz.tokenizers.base import TokenizerError
    from llmviz.tokenizers.char_word import CharTokenizer

    if (args.text is None) == (args.file is None):
        raise TokenizerError("Give the text to tokenize, or --file PATH (one of them).")
    if args.file is not None:
        try:
            text = _read_input(args.file).decode("utf-8")
        except UploadError as error:
            raise TokenizerError(
                str(error).replace("check the path.", "check the path ('-' reads standard input).")
            ) from None
        except UnicodeDecodeError as error:
            raise TokenizerError(
                f"{args.file} is not UTF-8 text: byte {error.object[error.start]:#04x} at offset "
                f"{error.start:,} cannot be decoded. Save it as UTF-8."
            ) from None
    else:
        text = args.text
    tokenizer = load_tokenizer(args.tokenizer, text, args.corpus)
    if isinstance(tokenizer, CharTokenizer):
        ids = tokenizer.encode(text)  # strict: names the characters outside the vocabulary
    elif args.allow_special:
        ids = tokenizer.encode(text, allowed_special="all")
    else:
        ids = tokenizer.encode(text)
    if args.format == "ids":
        print(" ".join(map(str, ids)))
    elif args.format == "json":
        print(
            json.dumps(
                {
                    "tokenizer": tokenizer.name,
                    "vocab_size": tokenizer.vocab_size,
                    "ids": ids,
                    "tokens": [tokenizer.printable(i) for i in ids],
                },
                ensure_ascii=False,
            )
        )
    else:
        rows = [[str(n), str(i), tokenizer.printable(i)] for n, i in enumerate(ids)]
        print(_format_table(["position", "id", "token"], rows))
        print(
            f"\n{len(ids):,} tokens for {len(text):,} characters ({tokenizer.name}, vocabulary "
            f"{tokenizer.vocab_size:,})"
        )
    return 0


def build_parser(prog: str = "llmviz") -> argparse.ArgumentParser:
    """The whole command line; ``prog`` is how the user called it (``llmviz`` or ``python -m llmviz``)."""
    parser = OneLineParser(prog=prog, description="llmviz command line")
    commands = parser.add_subparsers(dest="command", required=True)

    corpus_parser = commands.add_parser("corpus", help="list or download text corpora")
    corpus_commands = corpus_parser.add_subparsers(dest="corpus_command", required=True)
    corpus_commands.add_parser("list", help="print the corpus table").set_defaults(func=cmd_corpus_list)
    download = corpus_commands.add_parser("download", help="download a corpus into the cache")
    download.add_argument("name")
    download.set_defaults(func=cmd_corpus_download)

    tokenize = commands.add_parser(
        "tokenize",
        help="split text into tokens and print their ids",
        description="Tokenize text: prints each token (whitespace made visible) and its id.",
    )
    tokenize.add_argument("text", nargs="?", help="the text (or use --file)")
    tokenize.add_argument("--file", help="a UTF-8 text file to tokenize ('-' reads standard input)")
    tokenize.add_argument(
        "--tokenizer",
        default="gpt2",
        help="char, gpt2, cl100k, a BPE JSON file saved by llmviz, or a checkpoint folder "
        "such as data/gpt-python-docs (default: gpt2)",
    )
    tokenize.add_argument(
        "--corpus",
        default=None,
        help="for --tokenizer char: the corpus whose characters are the vocabulary "
        "(default: the text's own characters)",
    )
    tokenize.add_argument(
        "--allow-special",
        action="store_true",
        help="read special-token text such as <|endoftext|> as the special token (default: it is ordinary text)",
    )
    tokenize.add_argument("--format", choices=["table", "ids", "json"], default="table")
    tokenize.set_defaults(func=cmd_tokenize)

    from llmviz.cli.train import add_train_commands  # a broken import must fail loudly, not hide commands

    add_train_commands(commands)
    from llmviz.cli.adapt import add_adapt_commands

    add_adapt_commands(commands)
    from llmviz.cli.tuning import add_tuning_commands

    add_tuning_commands(commands)
    from llmviz.cli.interpret import add_interpret_commands
    from llmviz.cli.sae import add_sae_commands

    interpret_commands, common = add_interpret_commands(commands)
    add_sae_commands(interpret_commands, common)
    from llmviz.cli.lab import add_lab_commands, add_lesson_commands

    add_lab_commands(commands)
    add_lesson_commands(commands)
    return parser


def main(argv: list[str] | None = None, prog: str = "llmviz") -> int:
    configure_logging(logging.WARNING)
    for problem in settings.problems():
        print(f"warning: {problem}", file=sys.stderr)
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except LlmvizError as error:
        print(f"error: {_one_line(str(error))}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: this machine ran out of memory: try smaller sizes.", file=sys.stderr)
        return 1
    except OSError as error:  # a full disk, a folder that cannot be written: the system's reason, in one line
        where = f" ({error.filename})" if error.filename else ""
        print(f"error: {_one_line(error.strerror or str(error))}{where}.", file=sys.stderr)
        return 1


def _one_line(text: str) -> str:
    r"""A message as one line of stderr (a message may quote a text with newlines in it).

    >>> _one_line("two\nlines")
    'two lines'
    """
    return " ".join(text.split("\n"))
