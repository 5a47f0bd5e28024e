"""How a page shows a failure: llmviz's own errors as their message, anything else without a traceback."""

from __future__ import annotations

import contextlib
import traceback

import streamlit as st

from llmviz.errors import LlmvizError
from ui.text import literal_markdown


@contextlib.contextmanager
def friendly_errors(what: str = "this step"):
    """Show llmviz errors as ``st.error`` and anything unexpected without a traceback."""
    try:
        yield
    except LlmvizError as error:
        st.error(literal_markdown(str(error)))  # messages may quote the student's text or file names
    except Exception as error:  # noqa: BLE001 - a student never sees a traceback
        st.error(f"Something went wrong in {literal_markdown(what)}: {type(error).__name__}: "
                 f"{literal_markdown(str(error))}")
        with st.expander("Details for the teacher"):
            st.code("".join(traceback.format_exception_only(type(error), error)))
