"""The conductor holding an ARQ's bind or unbind, and since when."""

from alembic import op
import sqlalchemy as sa

revision = '2b7d4e9c1a53'
down_revision = 'fba9c07cb81b'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('accelerator_requests') as batch:
        batch.add_column(sa.Column('owner', sa.String(255), nullable=True))
        batch.add_column(sa.Column('taken_at', sa.DateTime(),
                                   nullable=True))
        batch.create_index('accelerator_requests_owner_idx', ['owner'])


def downgrade() -> None:
    with op.batch_alter_table('accelerator_requests') as batch:
        batch.drop_index('accelerator_requests_owner_idx')
        batch.drop_column('taken_at')
        batch.drop_column('owner')
