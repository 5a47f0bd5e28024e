"""ui/streamlit_private.py relies on private parts of Streamlit and Plotly: each is checked against what is installed,
so an upgrade that breaks one fails here, naming it, rather than in a classroom."""

import inspect
import re
from pathlib import Path

import plotly
import pytest
import streamlit

from tests.support.paths import ROOT
from ui import streamlit_private

FRONTEND = Path(streamlit.__file__).parent / "static" / "static" / "js"
RECHECK = "re-check every item in ui/streamlit_private.py's docstring against the new version, then update PINNED"


@pytest.mark.parametrize("package, installed", [("streamlit", streamlit.__version__), ("plotly", plotly.__version__)])
def test_the_pinned_versions_are_the_installed_ones(package, installed):
    assert installed == streamlit_private.PINNED[package], (
        f"{package} is {installed}, not {streamlit_private.PINNED[package]}: {RECHECK}"
    )
    pins = dict(re.findall(r"^([\w-]+)==(\S+)", (ROOT / "requirements.txt").read_text(encoding="utf-8"), re.M))
    assert pins[package] == streamlit_private.PINNED[package], (
        "requirements.txt and ui/streamlit_private.py pin different versions"
    )


def test_1_a_corrected_initial_value_is_what_streamlit_seeds_widgets_from():
    from streamlit.runtime.state.query_params import QueryParams

    params = QueryParams()
    params.set_initial_query_params("temperature=99&top_k=5")
    assert params.get_initial_value("temperature") == "99"
    streamlit_private.replace_initial_value(params, "temperature", ["2.0"])
    streamlit_private.replace_initial_value(params, "top_k", None)
    assert params.get_initial_value("temperature") == "2.0", "QueryParams._initial_query_params changed: " + RECHECK
    assert params.get_initial_value("top_k") is None


def _bundle() -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in FRONTEND.glob("*.js"))


def test_2_and_3_the_frontend_still_has_what_the_scripts_look_for():
    bundle = _bundle()
    assert len(bundle) > 1_000_000, f"Streamlit's frontend is not where it was ({FRONTEND}): " + RECHECK
    missing = [
        name
        for name in (*streamlit_private.STREAMLIT_TEST_IDS, *streamlit_private.PLOTLY_PRIVATE)
        if name not in bundle
    ]
    assert missing == [], f"Streamlit's or Plotly's frontend no longer has {missing}: " + RECHECK


def test_the_lists_name_everything_the_scripts_use():
    """The lists checked above are the scripts' real dependencies: every data-testid the presenter script and CSS
    use (in a selector, or compared by the script) is listed (and each listed one is used), and the SVG button uses
    each listed Plotly name."""
    presenter = streamlit_private.PRESENTER_CSS + streamlit_private.PRESENTER_SCRIPT
    # a data-testid is quoted: in a selector ('[data-testid="stHeading"] h2') or compared ("=== 'stLayoutWrapper'")
    assert set(re.findall(r"""['"](st[A-Z]\w+)['"]""", presenter)) == set(streamlit_private.STREAMLIT_TEST_IDS)
    assert all(name in streamlit_private.SVG_BUTTON_SCRIPT for name in streamlit_private.PLOTLY_PRIVATE)


def test_no_other_module_reaches_into_the_private_parts():
    # Plotly's private field is its chart's gd._context.toImageButtonOptions; other ._context names (the
    # standard library's HTTPSHandler._context in llmviz/data/corpus.py) are not Streamlit's or Plotly's
    fenced = (
        "_initial_query_params",
        'data-testid="st',
        "._context.toImageButtonOptions",
        "modebar",
        "streamlit.runtime",
        "get_script_run_ctx",
        "is_active_session",
        "set_corrected_value",
        "_key_id_mapper",
        "_new_widget_state",
        "StopException",
        "is_bound",
        "on_script_will_rerun",
        "register_widget",
    )
    offenders = [
        f"{path.relative_to(ROOT)}: {word}"
        for folder in ("ui", "stages", "llmviz")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "streamlit_private.py"
        for word in fenced
        if word in path.read_text(encoding="utf-8")
    ]
    offenders += [f"app.py: {word}" for word in fenced if word in (ROOT / "app.py").read_text(encoding="utf-8")]
    assert offenders == []


def test_4_the_runtime_parts_are_where_they_were():
    import dataclasses

    from streamlit import runtime
    from streamlit.runtime.scriptrunner import ScriptRunContext
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    assert streamlit_private.script_run_context() is None  # no script run here
    assert streamlit_private.fragment_rerun_main_script() is None  # nor a section's rerun
    fields = {field.name for field in dataclasses.fields(ScriptRunContext)}
    assert {"session_id", "main_script_path", "fragment_ids_this_run"} <= fields, "ScriptRunContext changed: " + RECHECK
    assert list(inspect.signature(runtime.Runtime.is_active_session).parameters) == ["self", "session_id"], (
        "Runtime.is_active_session changed: " + RECHECK
    )
    assert streamlit_private.session_is_connected("anyone") is None  # no server here
    from streamlit.runtime.scriptrunner import script_runner

    assert streamlit_private.stop_exception() is StopException
    assert "raise StopException()" in inspect.getsource(script_runner), "st.stop() ends a run another way: " + RECHECK


def test_5_and_6_the_link_helpers_work_in_a_real_session():
    """Under AppTest (a real session state): a bound option widget's value is written as its label, and a
    corrected value goes into the address."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from ui import streamlit_private

        st.selectbox("Model", [1, 2], format_func=lambda v: f"model {v}", key="m", bind="query-params")
        st.write(repr(streamlit_private.as_in_link("m", 2)))
        streamlit_private.write_link_value("note", "short")
        st.write(repr(dict(st.query_params)))

    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == "'model 2'", "the widget's serializer is not found: " + RECHECK
    assert "'note': 'short'" in at.markdown[1].value, "set_corrected_value did not reach the address: " + RECHECK


def test_7_the_parameters_bound_to_widgets_are_known():
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from ui import streamlit_private

        st.number_input("Seed", value=1, key="seed", bind="query-params")
        st.write(repr(sorted(streamlit_private.bound_link_params())))

    at = AppTest.from_function(script)
    at.query_params["seed"] = "42"
    at.query_params["other"] = "x"
    at.run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == "['seed']", "QueryParams.is_bound changed: " + RECHECK


def test_8_a_widget_value_of_the_wrong_kind_is_found_and_dropped():
    from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
    from streamlit.runtime.state.common import WidgetMetadata
    from streamlit.runtime.state.session_state import SessionState

    number = WidgetMetadata(id="$$ID-1-seed", deserializer=int, serializer=int, value_type="double_value")
    assert (
        streamlit_private.widget_value_problem(WidgetState(id="$$ID-1-seed", int_value=3), number) is None
    )  # chromium
    assert streamlit_private.widget_value_problem(WidgetState(id="$$ID-1-seed", double_value=3.0), number) is None
    assert "string_value" in streamlit_private.widget_value_problem(
        WidgetState(id="$$ID-1-seed", string_value="x"), number
    )
    refuses = WidgetMetadata(id="$$ID-1-m", deserializer=lambda v: [1, 2][v], serializer=str, value_type="int_value")
    assert "IndexError" in streamlit_private.widget_value_problem(WidgetState(id="$$ID-1-m", int_value=7), refuses)

    refused = []
    assert streamlit_private.guard_widget_states(lambda widget, why: refused.append(widget))
    state = SessionState()
    state._new_widget_state.set_widget_metadata(number)
    sent = WidgetStates()
    sent.widgets.extend([WidgetState(id="$$ID-1-seed", string_value="x")])
    state.on_script_will_rerun(sent)  # Streamlit's own method, wrapped: no ValueError from int("x")
    assert refused == ["$$ID-1-seed"], "SessionState.on_script_will_rerun changed: " + RECHECK
    assert state._new_widget_state.get_serialized("$$ID-1-seed") is None


def test_8_a_text_longer_than_its_widget_takes_and_a_bare_key_are_refused():
    from streamlit.elements.widgets.text_widgets import TextAreaSerde, TextInputSerde
    from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
    from streamlit.runtime.state.common import WidgetMetadata
    from streamlit.runtime.state.session_state import SessionState

    for serde, bound in ((TextInputSerde("", 50), 50), (TextAreaSerde("", None), streamlit_private._LARGEST_TEXT[0])):
        text = WidgetMetadata(
            id="$$ID-1-t", deserializer=serde.deserialize, serializer=serde.serialize, value_type="string_value"
        )
        assert streamlit_private.text_bound(text) == bound, "Streamlit's text serde lost max_chars: " + RECHECK
        assert (
            streamlit_private.widget_value_problem(WidgetState(id="$$ID-1-t", string_value="x" * bound), text) is None
        )
        too_long = streamlit_private.widget_value_problem(
            WidgetState(id="$$ID-1-t", string_value="x" * (bound + 1)), text
        )
        assert f"at most {bound:,}" in too_long

    refused = []
    assert streamlit_private.guard_widget_states(lambda widget, why: refused.append(widget))
    state = SessionState()
    sent = WidgetStates()
    sent.widgets.extend([WidgetState(id="steer_token", string_value="x")])
    state.on_script_will_rerun(sent)
    assert refused == ["steer_token"]
    assert dict(state.filtered_state) == {}  # Streamlit's KeyError came from here


def test_10_the_link_a_browser_writes_is_read_from_the_bound_widgets():
    from streamlit.testing.v1 import AppTest

    from tests.support.pages import TIMEOUT, by_label
    from ui.stages import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(str(ROOT / "stages/sampling.py")).run()
    assert "temperature" not in streamlit_private.link_values(at.session_state._state._state)  # the default: left out
    by_label(at.slider, "Temperature").set_value(1.5).run()
    link = streamlit_private.link_values(at.session_state._state._state)
    assert link["temperature"] == "1.5", "QueryParams._bindings_by_param or widget metadata changed: " + RECHECK


def test_11_uvicorn_believes_x_forwarded_for_only_from_the_hosts_it_is_given(monkeypatch):
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "")  # restored after the test (trust_forwarded_only_from sets it)
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware, _TrustedHosts

    middleware = ProxyHeadersMiddleware(app=None)
    assert isinstance(middleware.trusted_hosts, _TrustedHosts), "uvicorn's proxy middleware changed: " + RECHECK
    assert streamlit_private.trust_forwarded_only_from(["10.9.0.0/16"]) >= 1
    assert "127.0.0.1" not in middleware.trusted_hosts and "10.9.3.4" in middleware.trusted_hosts
    assert middleware.trusted_hosts.get_trusted_client_address("6.6.6.6, 10.1.2.3, 10.9.0.7")[0] == "10.1.2.3"
    streamlit_private.trust_forwarded_only_from([])
    assert "10.9.3.4" not in middleware.trusted_hosts


def _option_widgets():
    """Streamlit's serdes of the option widgets, each over the options "a" and "b", as (value kind, metadata)."""
    from streamlit.elements.widgets.multiselect import MultiSelectSerde
    from streamlit.elements.widgets.radio import RadioSerde
    from streamlit.elements.widgets.select_slider import SelectSliderSerde
    from streamlit.elements.widgets.selectbox import SelectboxSerde
    from streamlit.runtime.state.common import WidgetMetadata

    options, index = ["a", "b"], {"a": 0, "b": 1}
    serdes = {
        "selectbox": (
            "string_value",
            SelectboxSerde(options, formatted_options=options, formatted_option_to_option_index=index),
        ),
        "radio": (
            "string_value",
            RadioSerde(options, formatted_options=options, formatted_option_to_option_index=index),
        ),
        "multiselect": (
            "string_array_value",
            MultiSelectSerde(options, formatted_options=options, formatted_option_to_option_index=index),
        ),
        "select_slider": (
            "string_array_value",
            SelectSliderSerde(options, formatted_option_to_index=index, default_indices=[0]),
        ),
    }
    return {
        name: (
            kind,
            WidgetMetadata(
                id=f"$$ID-1-{name}",
                deserializer=serde.deserialize,
                serializer=serde.serialize,
                value_type=kind,
                callback=None,
            ),
        )
        for name, (kind, serde) in serdes.items()
    }


def _sent(widget_id: str, kind: str, labels: list[str]):
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    state = WidgetState(id=widget_id)
    if kind == "string_value":
        state.string_value = labels[0]
    else:
        state.string_array_value.data.extend(labels)
    return state


@pytest.mark.parametrize("name", ["selectbox", "radio", "multiselect", "select_slider"])
def test_8_an_option_an_option_widget_does_not_offer_is_refused_before_its_callback(name):
    """Streamlit's deserializer passes a label it does not know on as it came (for accept_new_options), and the
    widget's on_change callback read it (Tokens › Example: a KeyError): the guard refuses it before callbacks run."""
    import dataclasses

    from streamlit.proto.WidgetStates_pb2 import WidgetStates
    from streamlit.runtime.state.session_state import SessionState

    kind, metadata = _option_widgets()[name]
    offered, forged = _sent(metadata.id, kind, ["b"]), _sent(metadata.id, kind, ["a\nforged"])
    assert streamlit_private.widget_value_problem(offered, metadata, drawn=True) is None
    assert "does not offer" in streamlit_private.widget_value_problem(forged, metadata, drawn=True), (
        "Streamlit's option serde no longer holds formatted_option_to_option_index: " + RECHECK
    )
    assert streamlit_private.widget_value_problem(forged, metadata) is None  # drawn again: Streamlit's own default

    called, refused = [], []
    assert streamlit_private.guard_widget_states(lambda widget, why: refused.append(why))
    state = SessionState()
    state._new_widget_state.set_widget_metadata(dataclasses.replace(metadata, callback=lambda: called.append(1)))
    sent = WidgetStates()
    sent.widgets.append(forged)
    state.on_script_will_rerun(sent)
    assert called == [] and len(refused) == 1 and "does not offer" in refused[0]


def test_8_no_page_lets_an_option_widget_take_new_options():
    """The option check takes a label outside the options as forged: no widget of llmviz may accept new ones."""
    users = [
        path.relative_to(ROOT)
        for folder in ("ui", "stages")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "streamlit_private.py" and "accept_new_options" in path.read_text(encoding="utf-8")
    ]
    assert users == [], "a widget accepts new options: teach ui.streamlit_private.option_problem about it"


def test_14_every_streamlit_logger_gets_the_client_filter_now_and_later():
    import logging

    import streamlit.logger
    import streamlit.runtime.app_session  # noqa: F401 - the logger of a forged fragment id's line

    from llmviz.errors import ClientLogFilter

    flt = ClientLogFilter()
    assert streamlit_private.filter_streamlit_logs(flt) > 0, "streamlit.logger._loggers changed: " + RECHECK
    assert flt in logging.getLogger("streamlit.runtime.app_session").filters
    later = streamlit.logger.get_logger("streamlit.a_module_imported_later")
    assert flt in later.filters, "streamlit.logger.get_logger changed: " + RECHECK
    for found in streamlit.logger._loggers.values():  # this test process's loggers as they were
        found.removeFilter(flt)


def test_12_a_folder_is_served_as_a_components_assets(monkeypatch):
    """The flow's folder registered as the assets of ``llmviz.flow`` on a component manager: its main.js resolves
    to the file, under the address the browser loads it from (its imports resolve beside it)."""
    import sys

    from streamlit.components.v2.component_manager import BidiComponentManager

    getter = sys.modules[
        "streamlit.components.v2.get_bidi_component_manager"
    ]  # the module (its name is its function's)

    folder = ROOT / "ui" / "components" / "flow"
    manager = BidiComponentManager()
    monkeypatch.setattr(getter, "get_bidi_component_manager", lambda: manager)
    name = streamlit_private.serve_component_folder("llmviz", "flow", folder)
    assert name == "llmviz.flow" and manager.get_component_path(name) == str(folder.resolve())
    definition = manager.build_definition_with_validation(component_key=name, html=None, css="flow.css", js="main.js")
    assert definition.js_asset_relative_path == "main.js" and definition.css_asset_relative_path == "flow.css"
