"""Device claims: the conductor running host-side work on a device."""

from alembic import op
import sqlalchemy as sa

revision = '6f2b8d4e1c97'
down_revision = '3e7a9c2d5f18'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.add_column(sa.Column('claimed_by', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('claimed_for', sa.String(30),
                                   nullable=True))
        batch.add_column(sa.Column('claimed_at', sa.DateTime(),
                                   nullable=True))
        # NOTE(db): every conductor's takeover looks for claimed devices.
        batch.create_index('devices_claimed_by_idx', ['claimed_by'])


def downgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.drop_index('devices_claimed_by_idx')
        batch.drop_column('claimed_at')
        batch.drop_column('claimed_for')
        batch.drop_column('claimed_by')
