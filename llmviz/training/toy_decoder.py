"""Training the toy decoder (:mod:`llmviz.models.decoder`) on its toy task: the loop the Training page runs as a job.

>>> [step for step, _ in toy_task_loop(steps=2)]
[1, 2]
"""

from __future__ import annotations

import torch

from llmviz.device import isolated_rng
from llmviz.models.decoder import TOY_CONFIG, Decoder, DecoderConfig, toy_task


def train_toy(steps: int = 200, lr: float = 1e-2, seed: int = 0, config: DecoderConfig = TOY_CONFIG):
    """Train the decoder on :func:`toy_task` with SGD (momentum); yields (step, loss)."""
    with isolated_rng(seed):  # the same weights for a seed, and no other session's randomness moves
        model = Decoder(config)
    inputs, targets, encoder_output = toy_task(config, seed=seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        _, loss = model(inputs, encoder_output, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        yield step, loss.item()


def toy_task_loop(should_stop=None, steps: int = 200, seed: int = 0):
    """:func:`train_toy` as a job's task loop (picklable with ``functools.partial``): yields ``(step, loss)``
    with steps counted from 1."""
    for step, loss in train_toy(steps=steps, seed=seed):
        yield step + 1, loss
