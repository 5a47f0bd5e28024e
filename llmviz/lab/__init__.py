"""The lab as a service: what every student trained, kept, for every app process of the machine (or hall).

- :mod:`llmviz.lab.registry`: students, runs, curves, samples, snapshots and uploads in a database (SQLAlchemy:
  SQLite by default, PostgreSQL for a hall);
- :mod:`llmviz.lab.storage`: the snapshot files (safetensors) under ``<runs folder>/lab/<student>/<run>/``;
- :mod:`llmviz.lab.service`: the two together (:class:`~llmviz.lab.service.Lab`), with the disk quota and retention;
- :mod:`llmviz.lab.classroom`: the teacher's class view's numbers.
"""
