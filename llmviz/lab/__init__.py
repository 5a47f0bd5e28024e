"""The lab as a service: what every student trained, kept, for every app process of the machine (or hall).

- :mod:`llmviz.lab.service`: the one door (:class:`~llmviz.lab.service.Lab`): every question a page, the picker,
  the class view or the CLI asks about a student's runs, and every control, with the disk quota and retention;
- :mod:`llmviz.lab.registry`: the database (SQLAlchemy: SQLite by default, PostgreSQL for a hall), its rooms one
  module each: :mod:`~llmviz.lab.records` (the rows), :mod:`~llmviz.lab.slots` (the machine's training slots),
  :mod:`~llmviz.lab.inbox` (requests between processes), :mod:`~llmviz.lab.liveness` (which process holds which
  run; :mod:`~llmviz.lab.holders` names processes), and :mod:`~llmviz.lab.migrations` (its Alembic revisions);
- :mod:`llmviz.lab.storage`: the snapshot files (safetensors) under ``<runs folder>/lab/<student>/<run>/``;
- :mod:`llmviz.lab.faults`: the fault model (one sentence per fault, logged once);
- :mod:`llmviz.lab.classroom`: the teacher's class view's numbers.
"""
