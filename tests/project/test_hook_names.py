"""Hook names are built in one place, :func:`llmviz.models.gpt.cache_name`: no other source file of llmviz/, ui/ or
stages/ writes ``"blocks.3.attn.pattern"`` or ``f"blocks.{layer}.resid_pre"`` (nor a prefix of one, such as
``f"blocks.{layer}.mlp"``, to finish later) by hand. Parameter names (``blocks.0.attn.qkv.weight``), which are module
paths, and TransformerLens's own names are not hook names."""

import ast
import re

from llmviz.models.gpt import BLOCK_POINTS
from tests.support.paths import ROOT

DEFINED_IN = "llmviz/models/gpt.py"
#: Pages of other lanes of issue 48 that still write names by hand (fixed on their branches; empty at merge).
PENDING: set[str] = set()


def _names_a_hook_point(rest: str) -> bool:
    """Whether ``rest`` (what follows ``blocks.<layer>.``) is a block's hook point or the start of one."""
    return any(point == rest or point.startswith(rest + ".") for point in BLOCK_POINTS)


def hand_written_names(source: str) -> list[str]:
    """The strings of ``source`` (docstrings left out) that spell a block's hook name, ``{}`` for each value put in.

    >>> hand_written_names('x = cache[f"blocks.{i}.attn.pattern"]; y = f"blocks.{i}.mlp"; z = "blocks.0.ln1"')
    ['blocks.{}.attn.pattern', 'blocks.{}.mlp', 'blocks.0.ln1']
    >>> hand_written_names('w = state[f"blocks.{i}.attn.qkv.weight"]; p = f"blocks.{i}"')
    []

    A name whose folder is a variable (``f"{prefix}.{layer}.attn.pattern"``) is written by hand too:

    >>> hand_written_names('p = cache[f"{prefix}.{layer}.attn.pattern"]')
    ['{}.{}.attn.pattern']
    """
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in sorted(ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            for value in node.values:  # the parts of an f-string are not strings of their own
                docstrings.add(id(value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        else:
            continue
        match = re.fullmatch(r"(?:blocks|\{\})\.(\d+|\{\})\.(.+)", text)
        if match and _names_a_hook_point(match.group(2)):
            found.append(text)
    return found


def test_no_hook_name_is_written_by_hand():
    written = {}
    for folder in ("llmviz", "ui", "stages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name == DEFINED_IN or name in PENDING:
                continue
            names = hand_written_names(path.read_text(encoding="utf-8"))
            if names:
                written[name] = names
    assert written == {}
