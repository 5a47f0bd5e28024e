"""A model's parameters counted per component, one rule for every model kind (the GPT, the toy decoder).

>>> import torch.nn as nn
>>> layers = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))  # parameters 0.weight, 0.bias, 1.weight, 1.bias
>>> parameter_breakdown(layers, [(r"^0\\.", "linear"), (r"^1\\.", "LayerNorm")])
{'linear': 15, 'LayerNorm': 6}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import torch.nn as nn


def parameter_breakdown(
    model: nn.Module, rules: Sequence[tuple[str, str]], first: Iterable[str] = ()
) -> dict[str, int]:
    """Parameters per component: each parameter counts in the group of the first ``(pattern, group)`` rule whose
    pattern (a regular expression) its name matches; a shared (tied) parameter counts once. ``first``: groups
    listed (with 0) before any is counted, in this order; the others follow in the order they are met. A
    parameter no rule matches is a bug in the rules (AssertionError)."""
    groups = dict.fromkeys(first, 0)
    for name, parameter in model.named_parameters():  # shared parameters are listed once
        key = next((group for pattern, group in rules if re.search(pattern, name)), None)
        if key is None:
            raise AssertionError(f"unclassified parameter {name}")
        groups[key] = groups.get(key, 0) + parameter.numel()
    return groups
