"""Real models that expose every intermediate by name (``run_with_cache``): the GPT with its architecture switches
(:mod:`~llmviz.models.gpt`, :mod:`~llmviz.models.layers`), attention step by step
(:mod:`~llmviz.models.attention`), a small encoder–decoder (:mod:`~llmviz.models.decoder`), the character-level
ladder (:mod:`~llmviz.models.charlevel`) and the pretrained MiniLM encoder (:mod:`~llmviz.models.minilm`)."""
