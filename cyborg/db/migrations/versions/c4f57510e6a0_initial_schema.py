"""Initial schema: the eight tables of Cyborg's first release."""

from alembic import op
import sqlalchemy as sa

revision = 'c4f57510e6a0'
down_revision = None
branch_labels = None
depends_on = None

# NOTE(db): revisions never import cyborg.db.models: a revision must keep
# creating what it created when written, whatever the models become later.
_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}

# NOTE(db): children after their parents, so that dropping in reverse order
# never removes a table that a foreign key still references.
_TABLES = ('devices', 'controlpath_ids', 'deployables', 'attributes',
           'attach_handles', 'device_profiles', 'accelerator_requests',
           'services')


def _common_columns():
    return [
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        'devices',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('type', sa.String(30), nullable=False),
        sa.Column('vendor', sa.String(255), nullable=False),
        sa.Column('model', sa.String(255), nullable=False),
        sa.Column('std_board_info', sa.Text(), nullable=True),
        sa.Column('vendor_board_info', sa.Text(), nullable=True),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('status', sa.String(30), nullable=False),
        sa.Column('driver_name', sa.String(100), nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_devices0uuid'),
        **_TABLE_ARGS,
    )
    op.create_index('devices_hostname_idx', 'devices', ['hostname'])

    op.create_table(
        'controlpath_ids',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('device_id', sa.Integer(),
                  sa.ForeignKey('devices.id',
                                name='fk_controlpath_ids_device_id',
                                ondelete='CASCADE'),
                  nullable=False),
        sa.Column('cpid_type', sa.String(30), nullable=False),
        sa.Column('cpid_info', sa.String(255), nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_controlpath_ids0uuid'),
        **_TABLE_ARGS,
    )
    op.create_index('controlpath_ids_device_id_idx', 'controlpath_ids',
                    ['device_id'])

    op.create_table(
        'deployables',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('parent_id', sa.Integer(),
                  sa.ForeignKey('deployables.id',
                                name='fk_deployables_parent_id',
                                ondelete='CASCADE'),
                  nullable=True),
        sa.Column('root_id', sa.Integer(),
                  sa.ForeignKey('deployables.id',
                                name='fk_deployables_root_id',
                                ondelete='CASCADE'),
                  nullable=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('num_accelerators', sa.Integer(), nullable=False),
        sa.Column('device_id', sa.Integer(),
                  sa.ForeignKey('devices.id',
                                name='fk_deployables_device_id',
                                ondelete='CASCADE'),
                  nullable=False),
        sa.Column('driver_name', sa.String(100), nullable=True),
        sa.Column('rp_uuid', sa.String(36), nullable=True),
        sa.Column('bitstream_id', sa.String(36), nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_deployables0uuid'),
        sa.UniqueConstraint('name', name='uniq_deployables0name'),
        **_TABLE_ARGS,
    )
    op.create_index('deployables_device_id_idx', 'deployables',
                    ['device_id'])
    op.create_index('deployables_rp_uuid_idx', 'deployables', ['rp_uuid'])

    op.create_table(
        'attributes',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id',
                                name='fk_attributes_deployable_id',
                                ondelete='CASCADE'),
                  nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255), nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_attributes0uuid'),
        sa.UniqueConstraint('deployable_id', 'key',
                            name='uniq_attributes0deployable_id0key'),
        **_TABLE_ARGS,
    )

    op.create_table(
        'attach_handles',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id',
                                name='fk_attach_handles_deployable_id',
                                ondelete='CASCADE'),
                  nullable=False),
        sa.Column('cpid_id', sa.Integer(),
                  sa.ForeignKey('controlpath_ids.id',
                                name='fk_attach_handles_cpid_id',
                                ondelete='CASCADE'),
                  nullable=False),
        sa.Column('attach_type', sa.String(30), nullable=False),
        sa.Column('attach_info', sa.String(255), nullable=False),
        sa.Column('in_use', sa.Boolean(), nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_attach_handles0uuid'),
        **_TABLE_ARGS,
    )
    op.create_index('attach_handles_deployable_id_idx', 'attach_handles',
                    ['deployable_id'])

    op.create_table(
        'device_profiles',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('description', sa.Text(), nullable=True),
        sa.Column('profile_json', sa.Text(), nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_device_profiles0uuid'),
        sa.UniqueConstraint('name', name='uniq_device_profiles0name'),
        **_TABLE_ARGS,
    )

    op.create_table(
        'accelerator_requests',
        *_common_columns(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('state', sa.String(30), nullable=False),
        sa.Column('device_profile_id', sa.Integer(),
                  sa.ForeignKey('device_profiles.id',
                                name='fk_accelerator_requests_device_profile_id'),
                  nullable=False),
        sa.Column('device_profile_group_id', sa.Integer(), nullable=False),
        sa.Column('hostname', sa.String(255), nullable=True),
        sa.Column('device_rp_uuid', sa.String(36), nullable=True),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('attach_handle_id', sa.Integer(),
                  sa.ForeignKey('attach_handles.id',
                                name='fk_accelerator_requests_attach_handle_id',
                                ondelete='SET NULL'),
                  nullable=True),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id',
                                name='fk_accelerator_requests_deployable_id',
                                ondelete='SET NULL'),
                  nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_accelerator_requests0uuid'),
        **_TABLE_ARGS,
    )
    op.create_index('accelerator_requests_instance_uuid_idx',
                    'accelerator_requests', ['instance_uuid'])
    op.create_index('accelerator_requests_project_id_idx',
                    'accelerator_requests', ['project_id'])

    op.create_table(
        'services',
        *_common_columns(),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('binary', sa.String(64), nullable=False),
        sa.Column('topic', sa.String(255), nullable=True),
        sa.Column('version', sa.String(64), nullable=True),
        sa.Column('report_count', sa.Integer(), nullable=False),
        sa.Column('last_seen_up', sa.DateTime(), nullable=True),
        sa.Column('disabled', sa.Boolean(), nullable=False),
        sa.Column('disabled_reason', sa.String(255), nullable=True),
        sa.UniqueConstraint('host', 'binary',
                            name='uniq_services0host0binary'),
        **_TABLE_ARGS,
    )


def downgrade() -> None:
    # NOTE(db): dropping a table drops its indexes and constraints with it.
    for table in reversed(_TABLES):
        op.drop_table(table)
