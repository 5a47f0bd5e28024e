"""llmviz: the router. Run with ``streamlit run app.py``."""

import streamlit as st

import ui
from llmviz.device import seed_everything

st.set_page_config(page_title="llmviz", page_icon=":material/neurology:", layout="wide")

pages = [
    st.Page(str(ui.ROOT / stage.path), title=stage.title if stage.key != "text" else "Home",
            icon=stage.icon, url_path=stage.key if stage.key != "text" else "home",
            default=stage.key == "text")
    for stage in ui.PIPELINE
    if stage.exists
]
with ui.router_run():
    navigation = st.navigation(pages)
    settings = ui.sidebar()
    if settings.deterministic:
        seed_everything(settings.seed)
    navigation.run()
