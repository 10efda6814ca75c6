"""/v1 accelerators and their attachments; drivers available to agents."""

from alembic import op
import sqlalchemy as sa

revision = '9d3f6b2a8c15'
down_revision = '5a1e0c3b7d42'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'accelerators',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id', ondelete='CASCADE',
                                name='fk_accelerators_deployable_id'),
                  nullable=True),
        sa.Column('acc_specs', sa.Text(), nullable=True),
        sa.Column('revision', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('attach_type', sa.String(16), nullable=True),
        sa.Column('attach_state', sa.String(16), nullable=True),
        sa.Column('attached_to', sa.String(255), nullable=True),
        sa.Column('arq_uuid', sa.String(36), nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_accelerators0uuid'),
        sa.UniqueConstraint('name', name='uniq_accelerators0name'),
        sa.UniqueConstraint('deployable_id',
                            name='uniq_accelerators0deployable_id'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    with op.batch_alter_table('accelerator_requests') as batch:
        batch.alter_column('device_profile_id', existing_type=sa.Integer(),
                           nullable=True)
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('available_drivers', sa.Text(),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('services') as batch:
        batch.drop_column('available_drivers')
    # NOTE(migration): ARQs of /v1 attaches have no profile; they cannot
    # exist in the older schema.
    op.execute('DELETE FROM accelerator_requests '
               'WHERE device_profile_id IS NULL')
    with op.batch_alter_table('accelerator_requests') as batch:
        batch.alter_column('device_profile_id', existing_type=sa.Integer(),
                           nullable=False)
    op.drop_table('accelerators')
