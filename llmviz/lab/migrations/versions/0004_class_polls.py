"""The class answers together: polls on a page's predict-then-reveal questions, each student's answer, the teacher's
lead (the view the class follows, the lesson and its step), and who stopped following it.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    have = set(sa.inspect(op.get_bind()).get_table_names())
    if "lab_polls" not in have:  # a database whose tables a newer registry made before stamping has them already
        op.create_table(
            "lab_polls",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("page", sa.String(40), nullable=False),
            sa.Column("question", sa.String(80), nullable=False),
            sa.Column("prompt", sa.String(1000), nullable=False),
            sa.Column("options", sa.JSON, nullable=False),
            sa.Column("answer", sa.Integer, nullable=False),
            sa.Column("explanation", sa.String(4000), nullable=False),
            sa.Column("link", sa.String(2000), nullable=False),
            sa.Column("opened", sa.Float, nullable=False),
            sa.Column("closed", sa.Float, nullable=True),
            sa.Column("revealed", sa.Float, nullable=True),
            sa.Column("ended", sa.Float, nullable=True),
            sa.Column("by", sa.String(64), nullable=False),
        )
    if "lab_answers" not in have:
        op.create_table(
            "lab_answers",
            sa.Column("poll", sa.Integer, sa.ForeignKey("lab_polls.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("value", sa.Integer, nullable=False),
            sa.Column("time", sa.Float, nullable=False),
        )
    if "lab_lead" not in have:
        op.create_table(
            "lab_lead",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("active", sa.Boolean, nullable=False),
            sa.Column("link", sa.String(2000), nullable=False),
            sa.Column("lesson", sa.String(80), nullable=True),
            sa.Column("plan", sa.Text, nullable=True),
            sa.Column("step", sa.Integer, nullable=False),
            sa.Column("since", sa.Float, nullable=False),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("changed", sa.Float, nullable=False),
            sa.Column("by", sa.String(64), nullable=False),
        )
    if "lab_unfollowed" not in have:
        op.create_table(
            "lab_unfollowed",
            sa.Column("student", sa.String(64), sa.ForeignKey("lab_students.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("since", sa.Float, nullable=False),
        )


def downgrade() -> None:
    for name in ("lab_unfollowed", "lab_lead", "lab_answers", "lab_polls"):
        op.drop_table(name)
