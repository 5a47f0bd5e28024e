"""Write the shipped instruction and preference sets (data/instructions/*.jsonl) from the Python reference manual
that ships with Python (pydoc_data.topics): offline, the same files on every machine.

    python scripts/make_instructions.py
"""

from llmviz.adapt.instructions import FOLDER, write_sets

if __name__ == "__main__":
    for name, rows in write_sets(FOLDER).items():
        print(f"{name}: {rows} rows")
