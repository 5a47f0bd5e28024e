"""The intermediate-tensor cache shared by every llmviz model (TransformerLens's idea), and the hook points that
edit it during a forward pass.

A model's ``forward`` takes ``cache=None``; when a dict is passed, each step writes its
tensor under a name that reads as the pipeline (``blocks.0.attn.pattern``), detached and on
the CPU, in forward order. With ``cache=None`` nothing is recorded and nothing is slowed.

Every named step is also a *hook point*: the model writes ``x = record(cache, name, x)``, so when ``cache`` is a
:class:`HookPoints` the functions hooked on ``name`` see the live tensor and may return a replacement, which the
rest of the forward pass uses (TransformerLens's ``run_with_hooks``; its ``hook_`` names map to these in
``docs/interpretability.md``). A hook is ``hook(tensor, name) -> tensor or None`` (None: keep the tensor, as a
PyTorch forward hook does).

>>> points = HookPoints({"double": lambda x, name: 2 * x}, keep=["double"])
>>> record(points, "double", torch.tensor([1.0, 2.0]))
tensor([2., 4.])
>>> points["double"], points.reached
(tensor([2., 4.]), ['double'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import cast

import torch
import torch.nn as nn

from llmviz.errors import ConfigError

Cache = dict[str, torch.Tensor]
Hook = Callable[[torch.Tensor, str], "torch.Tensor | None"]


class HookPoints(dict[str, torch.Tensor]):
    """A cache that edits: pass it as a model's ``cache=`` and each named intermediate goes through the hooks on its
    name (in the order given) before the forward pass goes on with it.

    ``hooks`` maps a name to one hook or a list of them. ``keep``: the names to record as well (True: every name,
    as ``run_with_cache`` does; False: none), recorded *after* the hooks, so the cache holds what the forward
    pass used. :attr:`reached` lists the names the forward pass went through, so a hook on a name that does not
    exist can be told apart from one that changed nothing (:meth:`RecordsIntermediates.run_with_hooks` checks).
    """

    def __init__(self, hooks: Mapping[str, Hook | Iterable[Hook]] | None = None, keep: bool | Iterable[str] = False):
        super().__init__()
        self.hooks: dict[str, list[Hook]] = {
            name: [hook] if callable(hook) else list(hook) for name, hook in (hooks or {}).items()
        }
        self.keep_all = keep is True
        self.keep: set[str] = set() if isinstance(keep, bool) else set(keep)
        self.reached: list[str] = []

    def keeps(self, name: str) -> bool:
        return self.keep_all or name in self.keep

    def edit(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` after every hook on ``name`` (each sees the previous one's result)."""
        self.reached.append(name)
        for hook in self.hooks.get(name, ()):
            replaced = hook(tensor, name)
            if replaced is not None:
                if replaced.shape != tensor.shape:
                    raise ConfigError(
                        f"A hook on {name} returned shape {tuple(replaced.shape)}; the forward pass needs "
                        f"{tuple(tensor.shape)}."
                    )
                tensor = replaced
        return tensor

    def missing(self) -> list[str]:
        """Hooked names the forward pass never reached (a typo, or a point this model does not have)."""
        seen = set(self.reached)
        return [name for name in self.hooks if name not in seen]


def record(cache: Cache | None, name: str, tensor: torch.Tensor) -> torch.Tensor:
    """The hook point ``name``: returns ``tensor``, edited by the hooks on ``name`` when ``cache`` is a
    :class:`HookPoints`, and stores it under ``name`` when recording; a no-op when ``cache`` is None."""
    if cache is None:
        return tensor
    if isinstance(cache, HookPoints):
        tensor = cache.edit(name, tensor)
        if not cache.keeps(name):
            return tensor
    cache[name] = tensor.detach().to("cpu")
    return tensor


class RecordsIntermediates:
    """Mixin: ``run_with_cache`` and ``run_with_hooks`` for any model whose forward accepts ``cache=``."""

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, targets: torch.Tensor | None = None, **kwargs):
        """``(logits, loss, cache)`` for one forward pass, without gradients."""
        cache: Cache = {}
        logits, loss = cast(nn.Module, self)(idx, targets, cache=cache, **kwargs)  # mixed into nn.Module classes
        return logits, loss, cache

    @torch.no_grad()
    def run_with_hooks(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        hooks: Mapping[str, Hook | Iterable[Hook]] | None = None,
        keep: bool | Iterable[str] = False,
        **kwargs,
    ):
        """``(logits, loss, cache)`` for one forward pass whose named intermediates go through ``hooks``
        (``{name: hook or [hooks]}``); ``cache`` holds the names in ``keep`` (True: all), as edited.

        A forward pass with no hooks takes the same path (the written-out attention) as one with hooks, so a
        hook that changes nothing gives exactly the logits of ``run_with_hooks(idx)``. A hook on a name the
        forward pass never reached is a :class:`~llmviz.errors.ConfigError`."""
        points = HookPoints(hooks, keep)
        logits, loss = cast(nn.Module, self)(idx, targets, cache=points, **kwargs)
        unknown = points.missing()
        if unknown:
            example = next((name for name in points.reached if ".attn." in name), next(iter(points.reached), "logits"))
            raise ConfigError(
                f"This model has no intermediate named {', '.join(unknown)}: its names look like {example} "
                "(llmviz.models.gpt.cache_names lists them all)."
            )
        return logits, loss, dict(points)
