"""Write examples/notes.txt and examples/bpe-tokenizer.json, the files README's command-line examples use.

The text is real and needs no download: a few sections of Python's own reference manual (``pydoc_data.topics``,
the source of the python-docs corpus), about 20 KB. The tokenizer is llmviz's byte-level BPE (512 tokens) trained
on it, saved as the Tokens page saves one. Run from the repository root: ``python scripts/make_example_notes.py``.
"""

from pathlib import Path
from pydoc_data.topics import topics

from llmviz.tokenizers.bpe.tokenizer import BPETokenizer

SECTIONS = ["for", "while", "if", "function", "lambda", "naming", "assert"]  # the loop, the branch, the function
ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    text = "\n\n".join(topics[key].strip() for key in SECTIONS) + "\n"
    folder = ROOT / "examples"
    folder.mkdir(exist_ok=True)
    (folder / "notes.txt").write_text(text, encoding="utf-8")
    BPETokenizer.train(text, vocab_size=512).save(folder / "bpe-tokenizer.json")
    print(f"examples/notes.txt: {len(text):,} characters; examples/bpe-tokenizer.json: 512 tokens")


if __name__ == "__main__":
    main()
