"""Agent reports: device services and status reasons, report generations."""

from alembic import op
import sqlalchemy as sa

revision = '5a1e0c3b7d42'
down_revision = 'c4f57510e6a0'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        batch.add_column(sa.Column('services', sa.Text(), nullable=True))
        batch.add_column(sa.Column('status_reason', sa.String(255),
                                   nullable=True))
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('report_generation', sa.Integer(),
                                   nullable=True))
        batch.add_column(sa.Column('report_interval', sa.Integer(),
                                   nullable=True))
        batch.add_column(sa.Column('drivers', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.drop_column('drivers')
        batch.drop_column('report_interval')
        batch.drop_column('report_generation')
    with op.batch_alter_table('devices') as batch:
        batch.drop_column('status_reason')
        batch.drop_column('services')
