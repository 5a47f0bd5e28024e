"""The stages of the app, in the order data flows (app.py builds its navigation from them)."""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.paths import ROOT


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline: its key (the page's URL path), menu title and icon, page file and one-line blurb."""

    key: str
    title: str
    icon: str
    path: str  # page file, relative to the repository root
    blurb: str

    @property
    def exists(self) -> bool:
        return (ROOT / self.path).exists()


PIPELINE: list[Stage] = [
    Stage("text", "Text", ":material/description:", "stages/home.py", "a corpus: the raw material"),
    Stage("tokens", "Tokens", ":material/token:", "stages/tokens.py", "text → integer ids with BPE"),
    Stage(
        "embeddings",
        "Embeddings",
        ":material/scatter_plot:",
        "stages/embeddings.py",
        "ids → vectors; cosine similarity",
    ),
    Stage(
        "attention",
        "Attention",
        ":material/visibility:",
        "stages/attention.py",
        "tokens look at each other: masks, heads",
    ),
    Stage("model", "Model", ":material/account_tree:", "stages/model.py", "blocks, LayerNorm, GELU, parameters"),
    Stage(
        "inside",
        "Inside the model",
        ":material/biotech:",
        "stages/inside.py",
        "logit lens, head detectors, per-token loss, induction heads",
    ),
    Stage(
        "training",
        "Loss & training",
        ":material/show_chart:",
        "stages/training.py",
        "cross-entropy, optimizers, live curves",
    ),
    Stage("sampling", "Sampling", ":material/casino:", "stages/sampling.py", "temperature, top-k, top-p, beams"),
    Stage(
        "adapting",
        "Adapting",
        ":material/tune:",
        "stages/adapting.py",
        "LoRA, quantization, fine-tuning for a task, less memory",
    ),
    Stage(
        "tuning",
        "Tuning",
        ":material/school:",
        "stages/tuning.py",
        "base → assistant: instruction tuning (SFT) and DPO",
    ),
    Stage(
        "serving",
        "Serving",
        ":material/dns:",
        "stages/serving.py",
        "the KV cache, paged attention, batching",
    ),
]

#: Addresses of stages that moved: old URL path → the stage that shows it now (its link parameters go along).
MOVED: dict[str, str] = {"adapt": "adapting"}  # "Adapt & serve" became Adapting and Serving
