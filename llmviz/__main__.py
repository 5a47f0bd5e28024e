import sys

from llmviz.cli import main

sys.exit(main(prog="python -m llmviz"))
