"""Device health as agents report it, what the health loop keeps, and the
scrub of deployables between tenants."""

from alembic import op
import sqlalchemy as sa

revision = '7c3e1d5a9b20'
down_revision = '2b7d4e9c1a53'
branch_labels = None
depends_on = None

_COLUMNS = (
    ('health', sa.String(16)),
    ('health_reason', sa.String(255)),
    ('health_sources', sa.Text()),
    ('health_since', sa.DateTime()),
    ('health_flaps', sa.Integer()),
    ('health_flaps_since', sa.DateTime()),
    ('resume_status', sa.String(30)),
)


def upgrade() -> None:
    with op.batch_alter_table('devices') as batch:
        for name, kind in _COLUMNS:
            batch.add_column(sa.Column(name, kind, nullable=True))
        batch.create_index('devices_health_idx', ['health'])
        # NOTE(db): the health loop and every unbind look for draining and
        # held devices.
        batch.create_index('devices_status_idx', ['status'])
    with op.batch_alter_table('deployables') as batch:
        batch.add_column(sa.Column('cleaning_since', sa.DateTime(),
                                   nullable=True))
        batch.add_column(sa.Column('scrub_owner', sa.String(255),
                                   nullable=True))
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('scrubbing_drivers', sa.Text(),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.drop_column('scrubbing_drivers')
    with op.batch_alter_table('deployables') as batch:
        batch.drop_column('scrub_owner')
        batch.drop_column('cleaning_since')
    with op.batch_alter_table('devices') as batch:
        batch.drop_index('devices_status_idx')
        batch.drop_index('devices_health_idx')
        for name, _kind in reversed(_COLUMNS):
            batch.drop_column(name)
