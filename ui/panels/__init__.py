"""Page parts that several stages draw: a run's live panel (:mod:`~ui.panels.runs`), predict-then-reveal
(:mod:`~ui.panels.quiz`), the logit lens (:mod:`~ui.panels.lens`), pretrained models from the Hugging Face Hub
(:mod:`~ui.panels.hub`)."""
