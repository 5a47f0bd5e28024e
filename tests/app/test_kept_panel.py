"""The Kept runs table's rows (``ui.panels.kept``) and the lab door's sentences (``ui.lab``): their worked examples
(the suite's doctests leave out ``ui/``, whose modules need Streamlit)."""

import doctest

import ui.lab
import ui.panels.kept
import ui.panels.run_view


def test_the_worked_examples_of_the_kept_runs_table_and_the_lab_door():
    assert doctest.testmod(ui.panels.kept, optionflags=doctest.ELLIPSIS).failed == 0
    assert doctest.testmod(ui.lab, optionflags=doctest.ELLIPSIS).failed == 0
    assert doctest.testmod(ui.panels.run_view, optionflags=doctest.ELLIPSIS).failed == 0
