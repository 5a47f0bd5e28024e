"""One record: a run's kind says what it is ("train" becomes "training"), its state says who changed it and at
which step, a resumed run keeps its resume steps, a request says who asked.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    have = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("lab_runs")}
    for column in (
        sa.Column("state_by", sa.String(16), nullable=True),
        sa.Column("state_step", sa.Integer, nullable=True),
        sa.Column("resumes", sa.JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("wanted_by", sa.String(16), nullable=True),
    ):
        if column.name not in have:  # a database some of whose columns a newer registry made before stamping
            op.add_column("lab_runs", column)
    op.execute("UPDATE lab_runs SET kind = 'training' WHERE kind = 'train'")


def downgrade() -> None:
    op.execute("UPDATE lab_runs SET kind = 'train' WHERE kind = 'training'")
    with op.batch_alter_table("lab_runs") as batch:
        for name in ("wanted_by", "resumes", "state_step", "state_by"):
            batch.drop_column(name)
