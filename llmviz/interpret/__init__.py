"""Looking inside a GPT: the logit lens and the loss on every token (:mod:`~llmviz.interpret.lens.lens`), attention-head
detectors (:mod:`~llmviz.interpret.lens.heads`) and an induction head forming (:mod:`~llmviz.interpret.lens.induction`)."""
