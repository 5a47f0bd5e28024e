"""The registry as it was before revisions were kept (main before the one-record round).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lab_students",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("teacher", sa.Boolean, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("seen", sa.Float, nullable=False),
    )
    op.create_table(
        "lab_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("model", sa.String(120), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("best_val_loss", sa.Float, nullable=True),
        sa.Column("last_loss", sa.Float, nullable=True),
        sa.Column("error", sa.String(4000), nullable=True),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("holder", sa.String(120), nullable=True),
        sa.Column("heartbeat", sa.Float, nullable=True),
        sa.Column("training", sa.Boolean, nullable=False),
        sa.Column("memory", sa.BigInteger, nullable=False),
        sa.Column("wanted", sa.String(8), nullable=True),
    )
    op.create_index("lab_runs_student", "lab_runs", ["student"])
    columns: dict[str, list[sa.Column]] = {
        "lab_points": [sa.Column("loss", sa.Float, nullable=True), sa.Column("val_loss", sa.Float, nullable=True)],
        "lab_samples": [sa.Column("text", sa.String(4000), nullable=False)],
        "lab_snapshots": [
            sa.Column("path", sa.String(500), nullable=False),
            sa.Column("nbytes", sa.BigInteger, nullable=False),
        ],
    }
    for name, extra in columns.items():
        op.create_table(
            name,
            sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("step", sa.Integer, primary_key=True),
            *extra,
        )
    op.create_table(
        "lab_resumes",
        sa.Column("run", sa.String(32), sa.ForeignKey("lab_runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("path", sa.String(500), nullable=False),
        sa.Column("nbytes", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "lab_uploads",
        sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("nbytes", sa.BigInteger, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for name in ("lab_uploads", "lab_resumes", "lab_snapshots", "lab_samples", "lab_points", "lab_runs"):
        op.drop_table(name)
    op.drop_table("lab_students")
