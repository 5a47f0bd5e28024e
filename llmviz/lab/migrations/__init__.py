"""The registry's schema, versioned with Alembic: ``versions/`` holds one revision per change to
:mod:`llmviz.lab.records`' tables, the first one the schema as it was before revisions were kept. The registry
upgrades its database when it opens it (:func:`llmviz.lab.migrations.schema.upgrade`, as JupyterHub's
``dbutil.upgrade`` does): a database made before revisions were kept is stamped with the first revision, then upgraded.

A new revision: ``alembic.command.revision(schema.config(), "what changes")`` (from
:mod:`llmviz.lab.migrations.schema`) writes its file from ``script.py.mako``; write its ``upgrade`` by hand in portable
operations (``op.add_column``, ``op.create_table``: SQLite and PostgreSQL both) and make the next number its id.
"""
