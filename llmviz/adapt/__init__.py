"""After pre-training: LoRA (:mod:`~llmviz.adapt.lora`), quantization (:mod:`~llmviz.adapt.quantize`),
fine-tuning for classification (:mod:`~llmviz.adapt.finetune`) and training in less memory
(:mod:`~llmviz.adapt.memory`)."""
