"""After pre-training: LoRA (:mod:`~llmviz.lessons.adapting.lora`), quantization (:mod:`~llmviz.lessons.adapting.quantize`), fine-tuning
for classification (:mod:`~llmviz.lessons.adapting.finetune`) and training in less memory (:mod:`~llmviz.lessons.adapting.memory`)."""
