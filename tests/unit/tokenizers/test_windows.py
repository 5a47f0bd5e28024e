"""llmviz.tokenizers.windows: input–target windows shift by one."""

import pytest

from llmviz.tokenizers.base import TokenizerError
from llmviz.tokenizers.windows import sliding_windows


def test_sliding_windows_shift_by_one():
    ids = list(range(20))
    inputs, targets = sliding_windows(ids, context_length=4, stride=3)
    assert inputs.shape == targets.shape
    assert inputs[0].tolist() == [0, 1, 2, 3] and targets[0].tolist() == [1, 2, 3, 4]
    assert inputs[1].tolist() == [3, 4, 5, 6]
    assert (targets[:, :-1] == inputs[:, 1:]).all()
    assert targets.max() <= 19


def test_sliding_windows_text_too_short():
    with pytest.raises(TokenizerError, match="needs context size"):
        sliding_windows([1, 2, 3], context_length=3, stride=1)
