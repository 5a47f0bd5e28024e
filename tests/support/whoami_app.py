"""A page that says which student the server counts this browser session as (``ui.picker.client_id``), after the
app's once-per-process start (``ui.routing.start_server_once``: among others, whose X-Forwarded-For it believes).
``tests/browser/test_forwarded_address.py`` opens it over Streamlit's protocol with forged headers."""

import streamlit as st

from ui import picker, routing

routing.start_server_once()
st.info(f"client: {picker.client_id()} · session: {picker.session_id()}")
