"""The Trainer trains like nanoGPT: windows from every position, a precision switch, the fused attention with
dropout where the run owns its process, losses read back in bulk, and an optional torch.compile."""

import json
import math
import os
import sys

import pytest
import torch
from torch.overrides import TorchFunctionMode

import llmviz
from llmviz.adapt.memory import MemoryTrainer
from llmviz.data import corpus
from llmviz.errors import ConfigError
from llmviz.training.checkpoint import load_checkpoint, restore_training_state
from llmviz.training.config import TrainConfig, default_precision
from llmviz.training.dataset import Batches
from llmviz.training.safetensors_file import read_safetensors
from llmviz.training.trainer import CompileUnavailable, Trainer, resume

NAMES = corpus.load("names")[:6000]


def small(**changes) -> TrainConfig:
    base = dict(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=10,
        lr=1e-2,
        warmup_steps=2,
        eval_interval=100,
        eval_batches=2,
        seed=3,
    )
    return TrainConfig(**{**base, **changes})


def losses(trainer: Trainer) -> list[float]:
    return [m.train_loss for m in trainer.run()]


# ---------------------------------------------------------------------------- windows


def test_windows_start_at_every_position_by_default_as_nanogpt_draws_them():
    trainer = Trainer.from_text(NAMES, small())
    assert trainer.config.stride == 1
    ids = trainer.dataset.train_ids
    assert trainer.train_batches.count == len(ids) - 16  # every start whose 16 targets still fit
    inputs, targets = trainer.train_batches.sample(8)  # the run's first batch
    # nanoGPT's get_batch: ix = torch.randint(len(data) - block_size, (batch_size,)), x = data[i:i+block_size]
    generator = torch.Generator().manual_seed(3)  # the run's batch stream starts from its seed
    starts = torch.randint(len(ids) - 16, (8,), generator=generator)
    assert torch.equal(inputs, torch.stack([ids[i : i + 16] for i in starts]))
    assert torch.equal(targets, torch.stack([ids[i + 1 : i + 17] for i in starts]))


def test_windows_side_by_side_are_still_one_setting_away():
    ids = torch.arange(100)
    side_by_side = Batches(ids, context_length=16, stride=16, generator=torch.Generator().manual_seed(0))
    assert side_by_side.starts.tolist() == [0, 16, 32, 48, 64, 80]  # 80 + 16 targets end at 96 < 100
    inputs, targets = side_by_side.sample(50)
    assert set((inputs[:, 0] % 16).tolist()) == {0} and torch.equal(targets, inputs + 1)
    assert TrainConfig(stride=None).stride is None  # None: the context size, as older runs trained


def test_a_checkpoint_saved_before_stride_and_precision_existed_resumes_as_it_trained():
    config = TrainConfig.from_dict({"model": "mlp", "tokenizer": "char", "context_size": 12})
    assert config.stride is None and config.precision == "float32"
    saved = TrainConfig.from_dict({"model": "mlp", "tokenizer": "char", "stride": 3, "precision": "bf16"})
    assert saved.stride == 3 and saved.precision == "bf16"


# ---------------------------------------------------------------------------- precision


def test_auto_precision_is_bf16_on_a_gpu_that_has_it_and_float32_elsewhere(monkeypatch):
    assert TrainConfig().precision == "float32" == default_precision("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert TrainConfig(device="cuda").precision == "bf16"
    assert TrainConfig(device="cuda", precision="float32").precision == "float32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)  # before Ampere
    assert TrainConfig(device="cuda").precision == "float32"
    with pytest.raises(ConfigError, match="no bfloat16"):
        TrainConfig(device="cuda", precision="bf16")


def test_fp16_on_the_cpu_is_refused_with_a_clear_message():
    with pytest.raises(ConfigError) as refused:
        TrainConfig(precision="fp16")
    message = str(refused.value)
    assert "gradient scaler" in message and "CUDA" in message and "bf16 or float32" in message
    assert "\n" not in message
    # the true reason: torch has a CPU gradient scaler; float16 matrix products are what is slow on a CPU
    assert "needs a CUDA GPU" not in message and "slow path" in message
    assert torch.amp.GradScaler("cpu").is_enabled()
    with pytest.raises(ConfigError, match="precision must be one of"):
        TrainConfig(precision="fp8")


def test_bf16_on_the_cpu_trains_close_to_float32():
    """bf16 autocast rounds every matmul's inputs to 8 significant bits (a relative error of at most 2⁻⁸ ≈ 0.4 %):
    over 10 steps the losses stay within 1 % of float32's, but they are not the same numbers."""
    full = losses(Trainer.from_text(NAMES, small()))
    trainer = Trainer.from_text(NAMES, small(precision="bf16"))
    assert trainer.autocast_dtype is torch.bfloat16 and trainer.grad_scaler is None
    half = losses(trainer)
    assert half != full  # autocast did run in bf16
    for a, b in zip(full, half):
        assert abs(a - b) <= 0.01 * a, (full, half)
    assert half[-1] < half[0] - 0.3  # and it learns


def test_the_precision_is_saved_in_the_checkpoint_and_a_resumed_run_continues_exactly(tmp_path):
    config = small(precision="bf16", steps=6)
    whole = losses(Trainer.from_text(NAMES, config))
    first = Trainer.from_text(NAMES, config)
    list(first.run(steps=3))
    first.save(tmp_path / "ck")
    assert json.loads((tmp_path / "ck" / "checkpoint.json").read_text())["train_config"]["precision"] == "bf16"
    again = resume(tmp_path / "ck", NAMES)
    assert again.config.precision == "bf16" and again.autocast_dtype is torch.bfloat16
    assert [m.train_loss for m in again.run()] == whole[3:]


def test_the_loss_scale_of_an_fp16_run_is_saved_and_restored(tmp_path):
    """fp16's gradient scaler (the memory lesson's MemoryTrainer runs it on the CPU too) keeps its scale in the
    checkpoint: a resumed run scales its loss as the run would have."""
    config = small(steps=3)
    trainer = MemoryTrainer(config, Trainer.from_text(NAMES, config).dataset, fp16=True)
    list(trainer.run())
    assert trainer.grad_scaler is not None
    trainer.grad_scaler.update(new_scale=1024.0)  # a scale the run reached (it starts at 2¹⁶)
    trainer.save(tmp_path / "ck")
    assert float(read_safetensors(tmp_path / "ck" / "trainer.safetensors")["amp.scale"]) == 1024.0
    fresh = MemoryTrainer(config, trainer.dataset, fp16=True)
    model, _, meta = load_checkpoint(tmp_path / "ck")
    restore_training_state(fresh, tmp_path / "ck", model, meta)
    assert fresh.grad_scaler is not None and fresh.grad_scaler.get_scale() == 1024.0


# ---------------------------------------------------------------------------- the fused path with dropout


def test_a_run_that_owns_its_process_repeats_and_leaves_everyone_elses_randomness_alone():
    """claim_process: dropout in the fused kernels, drawn from the global generator playing the run's own stream.
    Two such runs stepped in turn, with someone else drawing from and reseeding the global generator in between,
    train exactly as each alone, and the global generator is left where the others left it."""
    config = small(dropout=0.2, steps=6)
    alone = Trainer.from_text(NAMES, config)
    alone.claim_process()
    expected = losses(alone)

    first, second = Trainer.from_text(NAMES, config), Trainer.from_text(NAMES, config.replace(seed=4))
    first.claim_process()
    second.claim_process()
    steps, other_steps = first.run(), second.run()
    got = []
    for _ in range(6):
        torch.manual_seed(1337)  # another session reseeds the global generator …
        state = torch.get_rng_state()
        got.append(next(steps).train_loss)
        next(other_steps)
        assert torch.equal(torch.get_rng_state(), state)  # … and finds it as it left it
        torch.rand(1000)  # and draws from it
    assert got == expected
    unclaimed = losses(Trainer.from_text(NAMES, config))  # its own generator in the written-out attention
    assert unclaimed != expected  # reproducible too, but other masks: the two paths draw differently


def test_a_run_without_dropout_lends_no_stream_and_draws_nothing():
    """claim_process on a model without dropout: no step draws a random number, so the global generator is never
    set to the run's stream (nothing to lend) and both streams end where they started; the losses are the same as a
    run with the lending forced."""
    config = small(steps=4)
    claimed = Trainer.from_text(NAMES, config)
    claimed.claim_process()
    assert not claimed.draws_dropout and claimed.model.config.dropout == 0.0
    stream, state = claimed.dropout_generator.get_state(), torch.get_rng_state()
    got = losses(claimed)
    assert torch.equal(claimed.dropout_generator.get_state(), stream) and torch.equal(torch.get_rng_state(), state)
    lent = Trainer.from_text(NAMES, config)
    lent.claim_process()
    lent.draws_dropout = True  # the stream lent every step, as before there was a check
    assert losses(lent) == got
    with_dropout = Trainer.from_text(NAMES, small(dropout=0.1))
    with_dropout.claim_process()
    assert with_dropout.draws_dropout


def test_without_dropout_the_fused_and_written_out_paths_train_alike():
    written_out = losses(Trainer.from_text(NAMES, small()))
    claimed = Trainer.from_text(NAMES, small())
    claimed.claim_process()
    for a, b in zip(written_out, losses(claimed)):
        assert abs(a - b) <= 1e-5


# ---------------------------------------------------------------------------- reading back


READS = {"item", "tolist", "__float__", "__bool__", "__int__", "__index__", "cpu", "numpy"}
# The package's own folder, not any path with "llmviz" in it: a clone in a folder named llmviz has torch under
# <clone>/.venv/..., which a substring test took for the project's code.
PACKAGE = os.path.realpath(os.path.dirname(llmviz.__file__)) + os.sep


def own_file(filename: str) -> str | None:
    """The path inside the llmviz package of a frame's file, or None for anyone else's (torch, the tests).

    >>> own_file(PACKAGE + "training/trainer.py")
    'training/trainer.py'
    """
    real = os.path.realpath(filename)
    return real[len(PACKAGE) :] if real.startswith(PACKAGE) else None


class HostReads(TorchFunctionMode):
    """Counts the tensor reads to the host (a wait for the device, on a GPU) that llmviz's own code makes."""

    def __init__(self):
        super().__init__()
        self.places: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in READS:
            caller = sys._getframe(1)
            place = own_file(caller.f_code.co_filename)
            if place is not None:
                self.places.append(f"{place}:{caller.f_lineno}")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("claimed", [False, True], ids=["own generator", "owns its process"])
def test_the_losses_are_read_back_only_on_progress_steps(claimed):
    """As on a GPU (report_every = 10): 20 steps, the validation loss at the last one, read back three times in
    all: once per report (steps 10 and 20) and once for the evaluation. Not once per step."""
    trainer = Trainer.from_text(NAMES, small(steps=20, dropout=0.1))
    if claimed:
        trainer.claim_process()
    trainer.report_every = 10
    counter = HostReads()
    with counter:
        history = list(trainer.run())
    assert [m.step for m in history] == list(range(1, 21)) and history[-1].val_loss is not None
    assert len(counter.places) == 3, counter.places


def test_reading_back_in_bulk_changes_when_the_numbers_come_not_what_they_are():
    every_step = Trainer.from_text(NAMES, small(steps=12, eval_interval=6))
    bulk = Trainer.from_text(NAMES, small(steps=12, eval_interval=6))
    bulk.report_every = 5
    asked = []
    seen = []
    for metrics in bulk.run(report_at=lambda step: asked.append(step) or step == 2):
        seen.append((metrics.step, bulk.step))  # the step yielded, the step the trainer is at
    expected = list(every_step.run())
    assert [(m.step, m.train_loss, m.val_loss, m.grad_norm) for m in bulk.history] == [
        (m.step, m.train_loss, m.val_loss, m.grad_norm) for m in expected
    ]
    # reports at 2 (asked for), 5 (every 5), 6 (evaluated), 10, 12 (evaluated, the last)
    assert seen == [(1, 2), (2, 2), (3, 5), (4, 5), (5, 5), (6, 6), (7, 10), (8, 10), (9, 10), (10, 10)] + [
        (11, 12),
        (12, 12),
    ]
    assert asked == [1, 2, 3, 4, 7, 8, 9, 11]  # asked only where no other reason reported already


def test_a_diverging_run_names_the_step_even_when_read_back_later():
    trainer = Trainer.from_text(NAMES, small(lr=1e6, grad_clip=None, warmup_steps=0, optimizer="sgd", steps=50))
    trainer.report_every = 10
    with pytest.raises(Exception) as raised:
        list(trainer.run())
    message = str(raised.value)
    assert "at step" in message and "Lower the learning rate" in message
    step = int(message.split("at step ")[1].split()[0].rstrip(":"))
    assert len(trainer.history) == step - 1  # every step before the bad one is kept
    assert all(math.isfinite(m.train_loss) for m in trainer.history)


# ---------------------------------------------------------------------------- torch.compile


def test_compile_is_off_by_default():
    trainer = Trainer.from_text(NAMES, small(steps=1))
    assert trainer.config.compile is False and trainer.train_model is trainer.model


def test_compile_where_it_cannot_work_is_a_one_line_message(monkeypatch):
    def unsupported(model, *args, **kwargs):
        raise RuntimeError("Windows not yet supported for torch.compile\n(a long explanation)")

    monkeypatch.setattr(torch, "compile", unsupported)
    with pytest.raises(CompileUnavailable) as refused:
        Trainer.from_text(NAMES, small(compile=True))
    message = str(refused.value)
    assert "\n" not in message and "Windows not yet supported" in message and "without --compile" in message
    assert isinstance(refused.value, ConfigError)  # pages and the CLI show it as they show any bad setting


def test_a_compiler_failure_at_the_first_step_is_a_one_line_message(monkeypatch):
    """torch.compile compiles at the first call: a missing C++ compiler shows up there, inside TorchDynamo."""
    from torch._dynamo.exc import BackendCompilerFailed

    def no_compiler(*args, **kwargs):
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx")

    class FailsAtFirstCall(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args, **kwargs):
            raise BackendCompilerFailed(no_compiler, RuntimeError("No working C++ compiler found"), None)

    monkeypatch.setattr(torch, "compile", lambda model, *args, **kwargs: FailsAtFirstCall(model))
    trainer = Trainer.from_text(NAMES, small(compile=True))
    with pytest.raises(CompileUnavailable) as refused:
        next(trainer.run())
    message = str(refused.value)
    assert "\n" not in message and "without --compile" in message
    assert "(RuntimeError: No working C++ compiler found)" in message  # what the compiler said, not TorchDynamo
    assert trainer.history == []


def test_only_the_packages_own_files_count_as_llmviz_code_whatever_the_clone_is_called():
    clone = os.path.dirname(PACKAGE.rstrip(os.sep))  # a clone named llmviz: <...>/llmviz/.venv/.../torch
    assert own_file(os.path.join(clone, ".venv/lib/python3.11/site-packages/torch/_tensor.py")) is None
    assert own_file("/home/student/llmviz/.venv/lib/python3.11/site-packages/torch/_tensor.py") is None
    assert own_file(os.path.join(PACKAGE, "training", "trainer.py")) == os.path.join("training", "trainer.py")
