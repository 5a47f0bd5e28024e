"""A curve point keeps its run kind's own measures (DPO's log-probability ratios, reward margin and preference
accuracy): the Tuning page draws a kept DPO run's chart from the lab, after a reload or a restart too.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    have = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("lab_points")}
    if "extra" not in have:  # a database whose columns a newer registry made before stamping
        op.add_column("lab_points", sa.Column("extra", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lab_points") as batch:
        batch.drop_column("extra")
