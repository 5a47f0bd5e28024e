import sys

from llmviz.cli.main import main

sys.exit(main(prog="python -m llmviz"))
