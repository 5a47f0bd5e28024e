"""Training a model: the trainer (:mod:`~llmviz.training.trainer`), checkpoints in safetensors
(:mod:`~llmviz.training.checkpoint`, :mod:`~llmviz.training.safetensors_file`), the loss taken apart
(:mod:`~llmviz.training.losses`), whether a run overfits (:mod:`~llmviz.training.overfitting`), snapshots kept
while a run trains (:mod:`~llmviz.training.snapshots`) and training on several processes
(:mod:`~llmviz.training.distributed`)."""
