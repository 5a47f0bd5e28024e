"""How a page shows a failure: llmviz's own errors as their message, anything else without a traceback (which
goes to the server's log instead)."""

from __future__ import annotations

import contextlib
import traceback

import streamlit as st

from llmviz.errors import LlmvizError, log_failure
from ui.text import literal_markdown


@contextlib.contextmanager
def friendly_errors(what: str = "this step"):
    """Show llmviz errors as ``st.error`` and anything unexpected without a traceback; the server's log gets
    the traceback (:func:`llmviz.errors.log_failure`)."""
    try:
        yield
    except LlmvizError as error:
        st.error(literal_markdown(log_failure(what, error)))  # messages may quote the student's text or file names
    except Exception as error:  # noqa: BLE001 - a student never sees a traceback
        line = log_failure(what, error)
        st.error(f"Something went wrong in {literal_markdown(what)}: {literal_markdown(line)}")
        with st.expander("Details for the teacher"):
            st.code("".join(traceback.format_exception_only(type(error), error)))
            st.caption("The server's log has the full traceback.")
