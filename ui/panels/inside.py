"""The Inside-the-model page's panels (``stages/inside.py`` wires them; the numbers come from
``llmviz/lessons/inside.py`` and ``llmviz.interpret``), one module per topic:

- :mod:`ui.panels.inside_lens`: the logit lens, the head detectors, the loss per token;
- :mod:`ui.panels.inside_interventions`: knock out heads, patch activations, steer (and the sweeps they run);
- :mod:`ui.panels.inside_induction`: the induction run;
- :mod:`ui.panels.inside_features`: the sparse autoencoder's feature browser and the student's own autoencoder.

This module holds what every topic reads a text and a token with.
"""

from __future__ import annotations

from llmviz.lessons import inside


# ------------------------------------------------------------------ shared by every tab
def view_ids(view, text: str, what: str) -> list[int]:
    """The token ids of ``text`` for the picked model (an unreadable one refused: ``inside.exact_ids``)."""
    return inside.exact_ids(view.tokenizer, view.model.config, text, what)


def label(view, token_id: int) -> str:
    return view.tokenizer.printable(int(token_id))
