"""llmviz: real language models, small enough to watch, built to be read.

The package is laid out in the order data flows, and never imports streamlit (the app's stages only render
what it computes):

- :mod:`llmviz.data` — corpora (built in, downloaded, uploaded);
- :mod:`llmviz.tokenizers` — characters, words, byte-level BPE, GPT-2's and cl100k's encodings, windows;
- :mod:`llmviz.models` — the GPT (every architecture switch), attention, character-level models, MiniLM;
- :mod:`llmviz.hub` — GPT-2 and Llama-family weights from Hugging Face;
- :mod:`llmviz.training` — the trainer, checkpoints, losses, snapshots, several processes;
- :mod:`llmviz.generation` — sampling, beam search, serving;
- :mod:`llmviz.interpret` — the logit lens, head detectors, the induction run;
- :mod:`llmviz.adapt` — LoRA, quantization, fine-tuning, memory savings;
- :mod:`llmviz.jobs` — training as background jobs in worker processes;
- :mod:`llmviz.lessons` — the numbers each stage of the app draws;
- :mod:`llmviz.cli` — ``python -m llmviz``;
- :mod:`llmviz.errors`, :mod:`llmviz.device` — errors a user can read, and where tensors live.
"""

__version__ = "0.1.0"
