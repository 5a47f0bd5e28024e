"""``python -m llmviz lab rebuild | backup | export``: the lab's database and its run folders (docs/classroom.md,
Backups).

- ``rebuild``: restores every student's runs from the run folders (each keeps a ``run.json``:
  :mod:`llmviz.lab.rebuild`) into the lab's database, a new one or the one there (what it has already is left
  alone, so it can run twice);
- ``backup OUT``: a consistent copy of the SQLite database while the app runs (:mod:`llmviz.lab.backup`);
- ``export RUN OUT``: what a kept run holds, as a file the command line and other tools read: a BPE tokenizer trained
  on the Tokens page as its JSON (``tokenize --tokenizer OUT``), word vectors as word2vec's text format, a model
  run's newest snapshot as a checkpoint (``sample --checkpoint OUT``);
- ``polls [POLL] [--names] [--out OUT]``: the class's polls, newest first; with a poll's number, its question, view
  and answers as CSV (on standard output, or the new file OUT; the students' names only with ``--names``).

``--runs-dir`` and ``--database`` default to ``LLMVIZ_RUNS_DIR`` and ``LLMVIZ_DATABASE_URL`` (as the app's). Bad
input is one line on standard error and exit status 2.
"""

from __future__ import annotations

import argparse
import os

from llmviz.errors import LlmvizError


def add_lab_commands(sub) -> None:
    group = sub.add_parser("lab", help="the lab's database: rebuild it from the run folders, back it up")
    commands = group.add_subparsers(dest="lab_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--runs-dir", default=None, help="the runs folder (default: LLMVIZ_RUNS_DIR, else runs/)")
    common.add_argument(
        "--database", default=None, help="the lab's database URL (default: LLMVIZ_DATABASE_URL, else <runs>/lab.db)"
    )
    rebuild = commands.add_parser(
        "rebuild", parents=[common], help="restore every student's runs from the run folders into the database"
    )
    rebuild.set_defaults(func=cmd_rebuild)
    backup = commands.add_parser("backup", parents=[common], help="a consistent copy of the SQLite database")
    backup.add_argument("out", help="the new file the copy is written to")
    backup.set_defaults(func=cmd_backup)
    export = commands.add_parser(
        "export", parents=[common], help="a kept run's BPE tokenizer, word vectors or newest snapshot, as a file"
    )
    export.add_argument("run", help="the run's id (the Kept runs table's choice ends with it)")
    export.add_argument("out", help="the new file it is written to")
    export.set_defaults(func=cmd_export)
    polls = commands.add_parser("polls", parents=[common], help="the class's polls; one poll's answers as CSV")
    polls.add_argument("poll", nargs="?", type=int, help="the poll's number (the list's first column)")
    polls.add_argument("--names", action="store_true", help="the students' names beside their answers")
    polls.add_argument("--out", default=None, help="the new CSV file (default: standard output)")
    polls.set_defaults(func=cmd_polls)


def _where(args: argparse.Namespace) -> tuple[str, str | None]:
    from llmviz import settings
    from llmviz.paths import runs_folder

    folder = args.runs_dir or os.fspath(runs_folder())
    url = args.database or settings.get("LLMVIZ_DATABASE_URL") or None
    return folder, url


def cmd_rebuild(args: argparse.Namespace) -> int:
    from llmviz.lab.faults import LabUnavailable
    from llmviz.lab.rebuild import ensure_schema, rebuild
    from llmviz.lab.service import Lab

    folder, url = _where(args)
    if not os.path.isdir(os.path.join(folder, "lab")):
        raise LlmvizError(f"{folder} has no run folders (no {os.path.join(folder, 'lab')}): nothing to rebuild from.")
    try:
        lab = Lab.at(folder, url)
        ensure_schema(lab.registry)
        done = rebuild(lab)
    except LabUnavailable as error:
        raise LlmvizError(str(error)) from None
    print(done.line())
    for skipped in done.skipped:
        print(f"  not readable: {skipped}/run.json")
    return 0


def cmd_backup(args: argparse.Namespace) -> int:
    from llmviz.lab.backup import backup_sqlite
    from llmviz.lab.registry import default_url

    folder, url = _where(args)
    path = backup_sqlite(url or default_url(folder), args.out)
    print(f"saved {path} ({os.path.getsize(path) / 2**20:.1f} MB)")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    import shutil

    from llmviz.lab.faults import LabUnavailable
    from llmviz.lab.service import MODEL_KINDS, Lab, SnapshotDamaged

    folder, url = _where(args)
    try:
        lab = Lab.at(folder, url)
        found = next((run for run in lab.registry.records.all_runs() if run.id == args.run), None)
        if found is None:
            raise LlmvizError(f"No run {args.run} is kept in {folder}.")
        result = lab.task_result(found.student, found.id)
        files = lab.registry.records.snapshots(found.id)
    except (LabUnavailable, SnapshotDamaged) as error:
        raise LlmvizError(str(error)) from None
    if os.path.exists(args.out):
        raise LlmvizError(f"{args.out} exists already: name a new file.")
    if result is not None:
        print(f"saved {args.out}: {_write_result(result[2], result[1], args.out)} ({found.label})")
    elif found.kind in MODEL_KINDS and files:
        step, path, _ = files[-1]
        shutil.copyfile(path, args.out)
        print(f"saved {args.out}: {found.label} at step {step} (a checkpoint)")
    else:
        raise LlmvizError(f"Run {args.run} ({found.label}) keeps nothing to export: no result and no snapshot.")
    return 0


def _write_result(meta: dict, tensors: dict, out: str) -> str:
    """Write a kept task's result to ``out`` in the format its kind is read in; what was written, in words."""
    from pathlib import Path

    from llmviz.lessons import embeddings_word2vec, tokens

    if meta["task"] == "bpe":
        bpe, _ = tokens.bpe_from_kept(tensors, meta)
        bpe.save(out)
        return f"a BPE tokenizer, {len(bpe.merges)} merges (tokenize --tokenizer {out})"
    if meta["task"] == "word2vec":
        _, trained, _ = embeddings_word2vec.word2vec_from_kept(tensors, meta)
        Path(out).write_text(embeddings_word2vec.word2vec_text(trained), encoding="utf-8")
        return f"{len(trained.vocabulary.words)} word vectors in word2vec's text format"
    raise LlmvizError(f"A kept result of kind {meta['task']!r} has no export.")


def cmd_polls(args: argparse.Namespace) -> int:
    from llmviz.lab.faults import LabUnavailable
    from llmviz.lab.service import Lab

    folder, url = _where(args)
    if args.out and os.path.exists(args.out):
        raise LlmvizError(f"{args.out} exists already: name a new file.")
    try:
        lab = Lab.at(folder, url)
        if args.poll is None:
            for poll in lab.registry.polls.all_polls():
                answered = len(lab.registry.polls.answers(poll.id))
                print(f"{poll.id:>4}  {poll.state:<8}  {poll.page:<10}  {answered:>3} answers  {poll.prompt[:70]!r}")
            return 0
        text = lab.teaching.poll_csv(None, args.poll, names=args.names)
    except LabUnavailable as error:
        raise LlmvizError(str(error)) from None
    if args.out is None:
        print(text, end="")
    else:
        with open(args.out, "x", encoding="utf-8", newline="") as out:
            out.write(text)
        print(f"saved {args.out}")
    return 0


def add_lesson_commands(sub) -> None:
    """``python -m llmviz lesson check FILE | list``: a lesson file checked as the app reads it (docs/lessons.md)."""
    group = sub.add_parser("lesson", help="lessons a class walks through: check a lesson file, list the shipped ones")
    commands = group.add_subparsers(dest="lesson_command", required=True)
    check = commands.add_parser("check", help="read a lesson file as the app does: its steps, or its first error")
    check.add_argument("file", help="the lesson's TOML file")
    check.set_defaults(func=cmd_lesson_check)
    listed = commands.add_parser("list", help="the lessons that come with the app")
    listed.set_defaults(func=cmd_lesson_list)


def cmd_lesson_check(args: argparse.Namespace) -> int:
    from llmviz.lessons.plans import load

    lesson = load(args.file)  # LessonError: "FILE, line N: what is wrong" on standard error, exit status 2
    print(f"{lesson.title}: {len(lesson.steps)} steps, {sum(1 for s in lesson.steps if s.poll)} polls")
    for number, step in enumerate(lesson.steps, start=1):
        print(f"{number:>3}. {step.title}  ({step.view}){'  poll: ' + step.poll if step.poll else ''}")
    return 0


def cmd_lesson_list(args: argparse.Namespace) -> int:
    from llmviz.lessons.plans import shipped

    for name, lesson in shipped().items():
        print(f"{name}: {lesson.title} ({len(lesson.steps)} steps)")
    return 0
