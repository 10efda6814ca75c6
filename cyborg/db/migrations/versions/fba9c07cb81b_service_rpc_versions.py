"""The RPC API version each conductor and agent serves."""

from alembic import op
import sqlalchemy as sa

revision = 'fba9c07cb81b'
down_revision = '9d3f6b2a8c15'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('rpc_version', sa.String(32),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.drop_column('rpc_version')
