"""Looking inside a GPT: the logit lens and the loss on every token (:mod:`~llmviz.interpret.lens`),
attention-head detectors (:mod:`~llmviz.interpret.heads`) and an induction head forming
(:mod:`~llmviz.interpret.induction`)."""
