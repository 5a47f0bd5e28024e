"""Page parts: each stage's figures and tables in the module of its name (:mod:`~ui.panels.inside` for
``stages/inside.py``, …; a page with many topics splits them beside it: ``inside_lens``, ``inside_features``…), and
the parts several stages draw, named for what they are: a run's live panel (:mod:`~ui.panels.runs`),
predict-then-reveal (:mod:`~ui.panels.quiz`). Panels build on :mod:`ui`'s shared modules, never the other way round
(``tests/project/test_layers.py``)."""
