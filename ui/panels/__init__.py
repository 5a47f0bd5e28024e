"""Page parts that several stages draw: a run's live panel (:mod:`~ui.panels.runs`), predict-then-reveal
(:mod:`~ui.panels.quiz`), the logit lens (:mod:`~ui.panels.lens`), GPT-2's download (:mod:`~ui.panels.gpt2`)."""
