"""docs/interpretability.md's name table says what llmviz.interpret.interventions.TRANSFORMER_LENS holds (the table
the TransformerLens comparison checks), for every hook point a block or the model has."""

from llmviz.interpret.interventions import TRANSFORMER_LENS
from llmviz.models.gpt import BLOCK_POINTS, MODEL_POINTS
from tests.support.paths import ROOT


def table_rows() -> dict[str, str]:
    rows = {}
    for line in (ROOT / "docs" / "interpretability.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`").removeprefix("blocks.L.")] = cells[2]
    return rows


def test_every_hook_point_is_in_the_table_with_transformer_lens_name():
    rows = table_rows()
    assert sorted(rows) == sorted(BLOCK_POINTS + MODEL_POINTS)
    for point, cell in rows.items():
        if point in TRANSFORMER_LENS:
            prefix = "blocks.L." if point in BLOCK_POINTS else ""
            assert cell == f"`{prefix}{TRANSFORMER_LENS[point]}`", point
        else:
            assert cell == "—", point


def test_the_documented_interpret_commands_parse():
    """Every ``python -m llmviz interpret …`` line of docs/cli.md and docs/interpretability.md is a command the CLI
    takes (its options spelled as the parser spells them)."""
    import re
    import shlex

    from llmviz.cli.main import build_parser

    found = 0
    for name in ("cli.md", "interpretability.md"):
        text = (ROOT / "docs" / name).read_text(encoding="utf-8").replace("\\\n", " ")  # continued lines joined
        for line in text.splitlines():
            line = re.split(r"\s#\s", line, maxsplit=1)[0].strip()
            if line.startswith("python -m llmviz interpret"):
                args = build_parser().parse_args(shlex.split(line)[3:])
                assert args.interpret_command in ("names", "ablate", "patch", "steer", "sae"), line
                found += 1
    assert found >= 10
