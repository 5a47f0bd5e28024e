"""A checkpoint's kept steps (``llmviz.training.checkpoint_steps``): a step file is checked against its model from
its header before any tensor is read, and a damaged or foreign one is one sentence."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from llmviz.errors import CheckpointError
from llmviz.models.charlevel import build_char_model
from llmviz.training.checkpoint_steps import drop_steps, load_step_into, model_state_copy, save_steps, step_file

pytestmark = pytest.mark.unit


def test_a_step_is_loaded_in_float32_as_its_float16_copy(tmp_path):
    model = build_char_model("bigram-neural", vocab_size=27)
    save_steps(tmp_path, {10: model_state_copy(model)})
    loaded = load_step_into(build_char_model("bigram-neural", vocab_size=27), tmp_path, 10)
    for name, tensor in model.state_dict().items():  # the reference: PyTorch's own float16 round trip
        assert torch.equal(loaded.state_dict()[name], tensor.to(torch.float16).to(torch.float32))


@pytest.mark.parametrize(
    "tensors",
    [
        {"W": torch.zeros(27, 27, dtype=torch.float16), "extra": torch.zeros(4)},  # a tensor the model has not
        {"W": torch.zeros(2000, 2000, dtype=torch.float16)},  # a shape it has not (16 MB: never read)
    ],
)
def test_a_step_file_that_does_not_fit_its_model_is_refused_from_its_header(tmp_path, tensors, monkeypatch):
    step_file(tmp_path, 10).parent.mkdir(parents=True)
    save_file(tensors, str(step_file(tmp_path, 10)))
    read = []
    monkeypatch.setattr("llmviz.training.checkpoint_steps.read_safetensors", lambda path: read.append(path))
    with pytest.raises(CheckpointError, match=r"^The weights of step 10 in \S+ do not fit its model\.$"):
        load_step_into(build_char_model("bigram-neural", vocab_size=27), tmp_path, 10)
    assert read == []  # refused before the tensors were read


def test_a_damaged_step_file_is_one_sentence_and_drop_steps_removes_only_step_files(tmp_path):
    step_file(tmp_path, 10).parent.mkdir(parents=True)
    step_file(tmp_path, 10).write_bytes(b"\x00" * 64)
    (tmp_path / "steps" / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match=r"cannot be read: the file is damaged\.$"):
        load_step_into(build_char_model("bigram-neural", vocab_size=27), tmp_path, 10)
    assert drop_steps(tmp_path) == 1
    assert [p.name for p in (tmp_path / "steps").iterdir()] == ["notes.txt"]
