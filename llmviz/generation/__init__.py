"""Writing with a model: sampling, beam search and the KV cache (:mod:`~llmviz.generation.sampling`), and serving
many requests at once (:mod:`~llmviz.generation.serving`)."""
