"""Partition modes: the modes a device offers and the one it is in."""

from alembic import op
import sqlalchemy as sa

revision = 'e8b1c4d7a209'
down_revision = '7c3e1d5a9b20'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.add_column(sa.Column('mode', sa.String(255), nullable=True))
        batch.add_column(sa.Column('modes', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.drop_column('modes')
        batch.drop_column('mode')
