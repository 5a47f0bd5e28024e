"""Pretrained weights from Hugging Face in llmviz's own GPT: GPT-2 (:mod:`~llmviz.hub.gpt2`) and the Llama family
(:mod:`~llmviz.hub.llama`: Llama, Mistral, Qwen2, SmolLM2, Mixtral)."""
