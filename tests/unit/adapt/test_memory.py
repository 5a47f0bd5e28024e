"""Memory: saved-activation bytes by hand, checkpointing equal to the plain step, bf16 halving, ZeRO arithmetic."""

import pytest
import torch

from llmviz.adapt import memory
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS


def test_saved_tensors_by_hand():
    x = torch.randn(8, 4, requires_grad=True)
    w = torch.randn(4, 3, requires_grad=True)
    with memory.SavedTensors(exclude=[w]) as saved:
        h = x @ w  # saves x (8·4 floats = 128 B) and w (excluded)
        y = torch.relu(h)  # saves its result y (8·3 floats = 96 B)
        y.sum().backward()
    assert saved.bytes == 128 + 96


def batch():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 256, (4, 33), generator=generator)
    return ids[:, :-1], ids[:, 1:]


def test_checkpointing_gives_the_same_loss_and_gradients_and_saves_less():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"])
    inputs, targets = batch()
    plain = memory.measure_step(model, inputs, targets)
    checkpointed = memory.measure_step(model, inputs, targets, checkpointing=True)
    assert plain.loss == checkpointed.loss
    assert checkpointed.saved_bytes < plain.saved_bytes / 2
    a, b = GPT(model.config), memory.set_checkpointing(GPT(model.config), True)
    a.load_state_dict(model.state_dict())
    b.load_state_dict(model.state_dict())  # the state dict is unchanged by checkpointing
    a(inputs, targets)[1].backward()
    b(inputs, targets)[1].backward()
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6), name
    assert type(memory.set_checkpointing(b, False).blocks[0]).__name__ == "Block"


@pytest.mark.parametrize("preset", ["llama-style", "moe-tiny"])
def test_checkpointing_works_with_rope_and_a_mixture_of_experts(preset):
    """The model passes RoPE's angles and the router's list to every block: a checkpointed block takes them too
    (it raised TypeError), gives the same loss (the experts' balancing loss included) and the same gradients."""
    torch.manual_seed(0)
    config = PRESETS[preset].replace(
        vocab_size=256, context_length=32, d_model=32, n_heads=4, n_layers=2, d_mlp=64, n_kv_heads=2
    )
    a = GPT(config)
    b = memory.set_checkpointing(GPT(config), True)
    b.load_state_dict(a.state_dict())
    inputs, targets = batch()
    loss_a, loss_b = a(inputs, targets)[1], b(inputs, targets)[1]
    assert torch.allclose(loss_a, loss_b, atol=1e-6)
    loss_a.backward()
    loss_b.backward()
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6), name


def test_bf16_autocast_saves_less_and_stays_close():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"])
    inputs, targets = batch()
    plain = memory.measure_step(model, inputs, targets)
    half = memory.measure_step(model, inputs, targets, bf16=True)
    assert half.saved_bytes < plain.saved_bytes
    assert half.loss == pytest.approx(plain.loss, rel=0.02)


def test_zero_stages_by_hand():
    n = 124_439_808  # GPT-2 small's parameters
    stages = memory.sharding(n, processes=8)
    assert stages[0].total == 16 * n
    assert stages[1].optimizer == 8 * n / 8 and stages[1].gradients == 4 * n
    assert stages[2].gradients == 4 * n / 8 and stages[2].parameters == 4 * n
    assert stages[3].total == pytest.approx(16 * n / 8)
    assert [s.total for s in memory.sharding(n, 1)] == [16 * n] * 4


def test_checkpointed_step_keeps_block_inputs_and_what_lies_outside_the_blocks():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"])  # 2 blocks, d = 32
    inputs, targets = batch()  # 4 × 32 tokens
    checkpointed = memory.measure_step(model, inputs, targets, checkpointing=True)
    block_inputs = 2 * 4 * 32 * 32 * 4
    plain_parts = memory.measure_step(model, inputs, targets)
    assert block_inputs < checkpointed.saved_bytes < plain_parts.saved_bytes


def test_dropout_does_not_make_the_settings_differ():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"].replace(dropout=0.3))
    inputs, targets = batch()
    assert (
        memory.measure_step(model, inputs, targets).loss
        == memory.measure_step(model, inputs, targets, checkpointing=True).loss
    )


def test_checkpointed_run_trains_exactly_like_the_plain_run_and_bf16_close():
    import pickle

    from llmviz.data import corpus
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data
    from llmviz.training.trainer import Trainer

    config = TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=5,
        lr=1e-2,
        warmup_steps=1,
        eval_interval=5,
        eval_batches=1,
        seed=3,
    )
    dataset = prepare_data(corpus.load("names")[:3000], config)
    torch.manual_seed(0)
    start = GPT(PRESETS["gpt-nano"].replace(vocab_size=dataset.vocab_size, context_length=16))
    plain = [m.train_loss for m in Trainer(config, dataset, initial_model=start).run()]
    trainer = memory.MemoryTrainer(config, dataset, initial_model=start, checkpointing=True)
    assert type(trainer.model.blocks[0]) is memory.CheckpointedBlock
    assert [m.train_loss for m in trainer.run()] == pytest.approx(plain, abs=1e-5)
    half = [m.train_loss for m in memory.MemoryTrainer(config, dataset, initial_model=start, bf16=True).run()]
    assert half == pytest.approx(plain, rel=0.05)
    restored = GPT(start.config)
    restored.load_state_dict(trainer.model.state_dict())  # snapshots load into a plain GPT
    pickle.loads(pickle.dumps(trainer))


def _names_run_setup():
    from llmviz.data import corpus
    from llmviz.training.config import TrainConfig
    from llmviz.training.dataset import prepare_data

    config = TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=4,
        lr=1e-2,
        warmup_steps=1,
        eval_interval=4,
        eval_batches=1,
        seed=3,
        dropout=0.0,
    )
    dataset = prepare_data(corpus.load("names")[:3000], config)
    torch.manual_seed(0)
    return config, dataset, GPT(PRESETS["gpt-nano"].replace(vocab_size=dataset.vocab_size, context_length=16))


def test_fp16_run_is_torchs_mixed_precision_recipe_step_for_step():
    """fp16 autocast with a gradient scaler (issue 28 item 5: fp16 on CUDA; the same code runs on the CPU, so it
    is tested here): every step equals torch's documented recipe written out below, and stays near float32."""
    import pickle

    from llmviz.training.trainer import Trainer, learning_rate

    config, dataset, start = _names_run_setup()
    trainer = memory.MemoryTrainer(config, dataset, initial_model=start, fp16=True)
    pickle.loads(pickle.dumps(trainer))  # it travels to a worker process
    reference = GPT(trainer.model.config)
    reference.load_state_dict(start.state_dict())
    matrices = [p for p in reference.parameters() if p.dim() >= 2]  # decayed; biases and norms are not
    optimizer = torch.optim.AdamW(
        [
            {"params": matrices, "weight_decay": config.weight_decay},
            {"params": [p for p in reference.parameters() if p.dim() < 2], "weight_decay": 0.0},
        ],
        lr=config.lr,
        fused=True,  # the trainer's kernel on the CPU, as on CUDA (llmviz.training.trainer.FUSED_ADAM_DEVICES)
    )
    scaler = torch.amp.GradScaler("cpu")
    batches = Trainer(config, dataset, initial_model=start).train_batches  # the same seed: the same batches
    losses = []
    for step in range(config.steps):
        inputs, targets = batches.sample(config.batch_size)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.float16):
            _, loss = reference(inputs, targets)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(reference.parameters(), config.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    assert [m.train_loss for m in trainer.run()] == losses
    for (name, mine), theirs in zip(trainer.model.state_dict().items(), reference.state_dict().values(), strict=True):
        assert torch.equal(mine, theirs), name
    plain = [m.train_loss for m in Trainer(config, dataset, initial_model=start).run()]
    assert losses == pytest.approx(plain, rel=0.05)


def test_fp16_step_saves_less_and_one_precision_at_a_time():
    from llmviz.errors import ConfigError

    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"])
    inputs, targets = batch()
    plain = memory.measure_step(model, inputs, targets)
    half = memory.measure_step(model, inputs, targets, fp16=True)
    assert half.fp16 and half.saved_bytes < plain.saved_bytes
    assert half.loss == pytest.approx(plain.loss, rel=0.02)
    with pytest.raises(ConfigError, match="one precision"):
        memory.measure_step(model, inputs, targets, bf16=True, fp16=True)
    config, dataset, start = _names_run_setup()
    with pytest.raises(ConfigError, match="one precision"):
        memory.MemoryTrainer(config, dataset, initial_model=start, bf16=True, fp16=True)


def test_fp16_is_offered_where_the_model_is_on_cuda():
    from llmviz.lessons import adapting

    assert [name for name, *_ in adapting.memory_settings(GPT(PRESETS["gpt-nano"]))] == [
        "plain",
        "checkpointing",
        "checkpointing + bf16",
    ]  # on this CPU


def test_autocasts_weight_copies_are_counted_apart():
    """bf16 autocast saves a 16-bit copy of each weight it multiplies by (for the backward pass): with
    checkpointing only the output head multiplies outside the blocks, so that copy is all there is, and it can
    make autocast save more than float32 does (a student saw 452.5 KiB → 500.5 KiB and no reason)."""
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"])
    inputs, targets = batch()
    config = model.config
    assert memory.measure_step(model, inputs, targets).cast_weight_bytes == 0
    checkpointed = memory.measure_step(model, inputs, targets, checkpointing=True, bf16=True)
    assert checkpointed.cast_weight_bytes == config.vocab_size * config.d_model * 2  # the head's weight, 2 bytes each
    # every Linear multiplies by its weight (the head too, tied to the embedding table: one copy per storage)
    linear_weights = {id(m.weight): m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)}
    plain_half = memory.measure_step(model, inputs, targets, bf16=True)
    assert plain_half.cast_weight_bytes == 2 * sum(linear_weights.values())
    assert plain_half.cast_weight_bytes < plain_half.saved_bytes
