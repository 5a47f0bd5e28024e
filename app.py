"""llmviz: the router. Run with ``streamlit run app.py``."""

import streamlit as st

import ui
from llmviz.device import seed_everything
from ui import charts, present, share

st.set_page_config(page_title="llmviz", page_icon=":material/neurology:", layout="wide",
                   initial_sidebar_state="collapsed" if present.requested() else "auto")

share.begin()
pages = [
    st.Page(str(ui.ROOT / stage.path), title=stage.title if stage.key != "text" else "Home",
            icon=stage.icon, url_path=stage.key if stage.key != "text" else "home",
            default=stage.key == "text")
    for stage in ui.PIPELINE
    if stage.exists
]
with ui.router_run():
    navigation = st.navigation(pages)
    share.restore_model()
    settings = ui.sidebar()
    share.record_model()
    if settings.deterministic:
        seed_everything(settings.seed)
    charts.install_export()
    present.apply()
    with share.links():
        navigation.run()
