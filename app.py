"""llmviz: the router. Run with ``streamlit run app.py``."""

import time

import streamlit as st

from llmviz import settings
from llmviz.jobs.default import default_manager
from llmviz.lab import trainer
from llmviz.lab.faults import LabUnavailable
from ui import charts, identity, link_model, picker, present, routing, sections, share, shared_sidebar, state, watch
from ui.panels import class_poll
from ui.stages import MOVED, PIPELINE, ROOT


def navigation_pages(teacher: bool) -> tuple[list, dict]:
    """Every page of the navigation: the stages in the order data flows (Home first, at ``/``), the class view
    (listed for the teacher only), and the hidden pages that send an old address to its page; and those redirects
    by their address."""
    stages = [stage for stage in PIPELINE if stage.exists]
    pages = [
        st.Page(
            str(ROOT / stage.path),
            title=stage.title if stage.key != "text" else "Home",
            icon=stage.icon,
            url_path=stage.key if stage.key != "text" else "start",
            default=stage.key == "text",
        )
        for stage in stages
    ]
    by_key = {stage.key: page for stage, page in zip(stages, pages)}
    pages.append(
        st.Page(
            str(ROOT / "stages/classroom.py"),
            title="The class",
            icon=":material/groups:",
            url_path="classroom",
            visibility="visible" if teacher else "hidden",
        )
    )
    redirects = {"home": pages[0]}  # hidden pages that go elsewhere, with the link's parameters
    redirects |= {old: by_key[new] for old, new in MOVED.items() if new in by_key}
    pages += [
        st.Page(routing.redirect(to), title=old, url_path=old, visibility="hidden") for old, to in redirects.items()
    ]
    return pages, redirects


def main() -> None:
    """The whole app: page config, the pages, the shared sidebar, the picked page."""
    st.set_page_config(
        page_title="llmviz",
        page_icon=str(ROOT / "ui/static/favicon.png"),  # committed: a Material icon's favicon comes from Google's CDN
        layout="wide",
        initial_sidebar_state="collapsed" if present.requested() else "auto",
    )

    routing.start_server_once()  # once per server process: the log handler, a line per unusable LLMVIZ_* value
    trainer.install(default_manager)  # the lab's runs train in this process's job manager (llmviz.lab.trainer)
    routing.page_torch_threads()  # once per server process: one torch thread per page run (LLMVIZ_PAGE_TORCH_THREADS)
    share.begin()
    teacher = identity.take_teacher_key()  # ?teacher=KEY once makes this browser the teacher's (docs/classroom.md)
    pages, redirects = navigation_pages(teacher)
    following = state.FOLLOWING.pop(default=False)  # this run redraws the page at a run's newer snapshot
    began = time.perf_counter()
    with (
        routing.router_run(),
        sections.timed_page() as page_timer,
    ):  # server time per run, logged only for benchmarks/pages.py
        navigation = st.navigation(pages)
        if navigation.url_path in redirects:  # before the sidebar binds its widgets to the link's parameters
            routing.redirect(redirects[navigation.url_path])()
        page_timer.name = navigation.url_path or "start"
        state.PAGE_PATH.set(navigation.url_path or "")  # a view's link names its page (ui.class_live)
        link_model.restore_model()
        shared_sidebar.sidebar()
        link_model.record_model()  # the sidebar's seed is passed down to each random action (settings.run_seed()): one
        # server process serves every session, so the global torch generator is never seeded here
        charts.install_export()
        present.apply()
        if settings.get("LLMVIZ_TEACHER_KEY"):  # a class: its poll and the teacher's lead, on every page
            class_poll.live_box()
        try:
            with share.links():
                navigation.run()
        except LabUnavailable as out:  # the lab's database is out: one sentence, not the generic error (issue 56)
            st.info(str(out))
        finally:  # also when the page stops or reruns itself
            routing.freeze_long_lived_objects()  # once per server process: see ui/routing.py
    if following:  # following a training run costs a page run per refresh: it counts in the watching budget
        watch.record(picker.session_id(), "follow", time.perf_counter() - began)


# Streamlit runs this script as "__main__". A worker process started while a script run had installed this file as
# the server's __main__ imports it as "__mp_main__" (multiprocessing's "safe importing of the main module"): it
# must draw nothing and start nothing, or it would start a forkserver of its own while still bootstrapping.
if __name__ == "__main__":
    main()
