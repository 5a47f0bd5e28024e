"""Every LLMVIZ_* variable is declared once in llmviz/settings.py, read only through it, and documented."""

import re
from pathlib import Path

import pytest

from llmviz import settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_configuration_doc_holds_the_table_of_every_setting():
    assert settings.markdown_table() in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_no_code_reads_an_llmviz_variable_but_the_settings_module():
    offenders = []
    for folder in ("llmviz", "ui", "stages"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "settings.py":
                continue
            text = path.read_text(encoding="utf-8")
            offenders += [
                f"{path.relative_to(ROOT)}: {m}"
                for m in re.findall(r"environ\w*\.?(?:get)?\(?\[?\s*['\"]LLMVIZ_\w+", text)
            ]
    assert offenders == []


def test_every_name_the_code_passes_to_get_is_declared():
    names = set()
    for folder in ("llmviz", "ui", "stages"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r"settings\.get(?:_or)?\(\s*\"(LLMVIZ_\w+)\"", path.read_text(encoding="utf-8")))
    assert names and names <= set(settings.SETTINGS)


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("LLMVIZ_RUNS_PER_SESSION", "one", 1),
        ("LLMVIZ_RUNS_PER_SESSION", "-3", 1),
        ("LLMVIZ_RUNS_PER_SESSION", "3", 3),
        ("LLMVIZ_SNAPSHOT_MB", "nan", 128.0),
        ("LLMVIZ_SNAPSHOT_MB", "0.5", 128.0),
        ("LLMVIZ_SNAPSHOT_MB", "256", 256.0),
        ("LLMVIZ_WORKERS", "fork", "process"),
        ("LLMVIZ_WORKERS", " thread ", "thread"),
        ("LLMVIZ_MAX_JOBS", "", None),
    ],
)
def test_a_bad_value_falls_back_to_the_default_and_is_reported(name, raw, expected):
    environ = {name: raw}
    assert settings.get(name, environ) == expected
    usable = expected != settings.SETTINGS[name].default or raw.strip() in ("", str(expected))
    reported = settings.problems(environ)
    assert (reported == []) == (usable or not raw.strip()), reported
    assert all(line.count("\n") == 0 and line.startswith(name) for line in reported)


def test_an_unknown_name_is_a_programming_error():
    with pytest.raises(KeyError):
        settings.get("LLMVIZ_NO_SUCH_THING")


def test_the_cli_says_what_it_ignores_in_one_line(capsys):
    import os

    from llmviz.cli.main import main

    os.environ["LLMVIZ_RUNS_PER_SESSION"] = "one"
    try:
        assert main(["corpus", "list"]) == 0
    finally:
        del os.environ["LLMVIZ_RUNS_PER_SESSION"]
    err = capsys.readouterr().err
    assert "warning: LLMVIZ_RUNS_PER_SESSION='one'" in err and "Traceback" not in err
