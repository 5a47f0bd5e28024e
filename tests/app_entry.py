"""AppTest entry point: runs app.py from a folder without a pages/ directory.

Streamlit's AppTest resets its multipage mode on every run and, beside a ``pages/`` folder,
starts each run in the old pages-folder mode; run from here, every run goes through app.py's
``st.navigation`` exactly as in the browser after the first request.
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parent.parent / "app.py"), run_name="__main__")
