"""Offer reasons: why a device that offers nothing offers nothing."""

from alembic import op
import sqlalchemy as sa

revision = 'a248f1945ae3'
down_revision = 'e8b1c4d7a209'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.add_column(sa.Column('offer_reason', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.drop_column('offer_reason')
