"""SQLAlchemy models of Cyborg's tables; alembic migrations must match them."""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm


# NOTE(clock): a record's own time of creation and last change; no
# liveness or age judgement reads these defaults. Timestamps that one
# reads (last_seen_up, taken_at, an ARQ's or device's updated_at when it
# changes state, health_since, cleaning_since) are written from the
# database server's clock by the queries (cyborg.db.clock); a default
# computed in SQL would cost a fetch after every INSERT.
def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    """Declarative base; every table has an integer id and timestamps."""

    # NOTE(db): named foreign keys, so that a later migration can drop or
    # alter one without looking up what each backend called it.
    metadata = sa.MetaData(naming_convention={
        'fk': 'fk_%(table_name)s_%(column_0_name)s',
    })

    id: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, primary_key=True, autoincrement=True)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, default=_utcnow, nullable=True)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, onupdate=_utcnow, nullable=True)

    def as_dict(self):
        return {c.name: getattr(self, c.key)
                for c in self.__table__.columns}


# NOTE(db): every uuid column is an insert sentinel: it lets the ORM insert
# many rows of one table in one statement and match the ids RETURNING gives
# back to its rows, also on SQLite, which has no implicit sentinel.

# NOTE(db): MySQL needs utf8mb4 and InnoDB for foreign keys and full unicode;
# other backends ignore these keywords.
_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


class Device(Base):
    """A physical accelerator card found on one host."""

    __tablename__ = 'devices'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_devices0uuid'),
        sa.Index('devices_hostname_idx', 'hostname'),
        sa.Index('devices_health_idx', 'health'),
        sa.Index('devices_status_idx', 'status'),
        sa.Index('devices_claimed_by_idx', 'claimed_by'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    type: orm.Mapped[str] = orm.mapped_column(sa.String(30), nullable=False)
    vendor: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                nullable=False)
    model: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    std_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    vendor_board_info: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    hostname: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                  nullable=False)
    status: orm.Mapped[str] = orm.mapped_column(sa.String(30),
                                                nullable=False)
    driver_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(100))
    # JSON list of what the backend offers ('crypto.sym', 'vgpu:<type>'...).
    services: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    status_reason: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # What the agent last reported of the device's health (ok, degraded,
    # failed, unknown; NULL before any report said), why, from which checks
    # (JSON list), and since when it has been that.
    health: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    health_reason: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    health_sources: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    health_since: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    # Changes into or out of failed since health_flaps_since: a device
    # that flaps stays excluded until an operator enables it.
    health_flaps: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    health_flaps_since: orm.Mapped[datetime.datetime | None] = (
        orm.mapped_column(sa.DateTime))
    # The status a device held in error by its health returns to.
    resume_status: orm.Mapped[str | None] = orm.mapped_column(sa.String(30))
    # The partition mode the device is in (a GPU: passthrough,
    # vgpu:<type>, sriov-vgpu:<type>) and, as JSON, those its hardware
    # offers; NULL for devices without modes.
    mode: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    modes: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Why the device offers nothing (no deployable), as its driver says;
    # NULL when it offers something.
    offer_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # The claim on the device (cyborg.db.claims): the conductor running
    # host-side work on it, which workflow, since when; NULL when free.
    claimed_by: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    claimed_for: orm.Mapped[str | None] = orm.mapped_column(sa.String(30))
    claimed_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)

    deployables: orm.Mapped[list['Deployable']] = orm.relationship(
        back_populates='device', cascade='all, delete-orphan',
        passive_deletes=True)
    controlpath_ids: orm.Mapped[list['ControlpathID']] = orm.relationship(
        back_populates='device', cascade='all, delete-orphan',
        passive_deletes=True)


class ControlpathID(Base):
    """How the host reaches a device for management (its PF's address)."""

    __tablename__ = 'controlpath_ids'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_controlpath_ids0uuid'),
        sa.Index('controlpath_ids_device_id_idx', 'device_id'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'), nullable=False)
    cpid_type: orm.Mapped[str] = orm.mapped_column(sa.String(30),
                                                   nullable=False)
    cpid_info: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                   nullable=False)

    device: orm.Mapped[Device] = orm.relationship(
        back_populates='controlpath_ids')


class Deployable(Base):
    """A unit a tenant can be given part of: one Placement provider."""

    __tablename__ = 'deployables'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_deployables0uuid'),
        sa.UniqueConstraint('name', name='uniq_deployables0name'),
        sa.Index('deployables_device_id_idx', 'device_id'),
        sa.Index('deployables_rp_uuid_idx', 'rp_uuid'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    parent_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    root_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    num_accelerators: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False)
    device_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('devices.id', ondelete='CASCADE'), nullable=False)
    driver_name: orm.Mapped[str | None] = orm.mapped_column(sa.String(100))
    rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    bitstream_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    # Since when the deployable is being scrubbed for its next tenant (its
    # capacity reserved, no bind taken), and which conductor runs the
    # scrub; NULL when it is not.
    cleaning_since: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    scrub_owner: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))

    device: orm.Mapped[Device] = orm.relationship(
        back_populates='deployables')
    attributes: orm.Mapped[list['Attribute']] = orm.relationship(
        back_populates='deployable', cascade='all, delete-orphan',
        passive_deletes=True, order_by='Attribute.id')
    attach_handles: orm.Mapped[list['AttachHandle']] = orm.relationship(
        back_populates='deployable', cascade='all, delete-orphan',
        passive_deletes=True, order_by='AttachHandle.id')
    accelerator: orm.Mapped['Accelerator | None'] = orm.relationship(
        back_populates='deployable', cascade='all, delete-orphan',
        passive_deletes=True, uselist=False)


class Attribute(Base):
    """A key/value fact about a deployable (resource class, traits...)."""

    __tablename__ = 'attributes'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_attributes0uuid'),
        sa.UniqueConstraint('deployable_id', 'key',
                            name='uniq_attributes0deployable_id0key'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'), nullable=False)
    key: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    value: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                               nullable=False)

    deployable: orm.Mapped[Deployable] = orm.relationship(
        back_populates='attributes')


class AttachHandle(Base):
    """What Nova attaches to an instance: a PCI function or an mdev."""

    __tablename__ = 'attach_handles'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_attach_handles0uuid'),
        sa.Index('attach_handles_deployable_id_idx', 'deployable_id'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    deployable_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'), nullable=False)
    cpid_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('controlpath_ids.id', ondelete='CASCADE'),
        nullable=False)
    attach_type: orm.Mapped[str] = orm.mapped_column(sa.String(30),
                                                     nullable=False)
    attach_info: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                                     nullable=False)
    in_use: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, nullable=False, default=False)

    deployable: orm.Mapped[Deployable] = orm.relationship(
        back_populates='attach_handles')
    controlpath: orm.Mapped[ControlpathID] = orm.relationship()


class DeviceProfile(Base):
    """A named request for accelerators, as Nova flavors reference them."""

    __tablename__ = 'device_profiles'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_device_profiles0uuid'),
        sa.UniqueConstraint('name', name='uniq_device_profiles0name'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    description: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    profile_json: orm.Mapped[str] = orm.mapped_column(sa.Text,
                                                      nullable=False)


class AcceleratorRequest(Base):
    """One accelerator of one device-profile group, bound to an instance."""

    __tablename__ = 'accelerator_requests'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_accelerator_requests0uuid'),
        sa.Index('accelerator_requests_instance_uuid_idx', 'instance_uuid'),
        sa.Index('accelerator_requests_project_id_idx', 'project_id'),
        sa.Index('accelerator_requests_owner_idx', 'owner'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(30), nullable=False)
    # NOTE(db): NULL for the ARQ of a /v1/accelerators attach, which
    # names its accelerator instead of a profile.
    device_profile_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('device_profiles.id'), nullable=True)
    device_profile_group_id: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False)
    hostname: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    device_rp_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    attach_handle_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('attach_handles.id', ondelete='SET NULL'))
    deployable_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='SET NULL'))
    # The conductor (its host, as in services) doing the ARQ's bind, or the
    # release of its handle after an unbind, and since when; NULL when no
    # work is in flight. Another conductor adopts it once that one stops
    # heartbeating.
    owner: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    taken_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)


class Accelerator(Base):
    """What /v1/accelerators adds to an assignable unit.

    A row with a deployable holds the operator's capability notes and the
    attachment of a discovered deployable (its uuid is the deployable's);
    one without describes an accelerator no agent sees (a remote or
    standalone rack accelerator), with the spec the operator gave.
    """

    __tablename__ = 'accelerators'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_accelerators0uuid'),
        sa.UniqueConstraint('name', name='uniq_accelerators0name'),
        sa.UniqueConstraint('deployable_id',
                            name='uniq_accelerators0deployable_id'),
        _TABLE_ARGS,
    )

    uuid: orm.Mapped[str] = orm.mapped_column(sa.String(36), nullable=False,
                                              insert_sentinel=True)
    name: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    deployable_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('deployables.id', ondelete='CASCADE'))
    # JSON: the whole acc_specs of an operator's accelerator; only
    # acc_capability of a discovered one (the rest is the hardware's).
    acc_specs: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Bumped by every change of the spec; it is the ETag of the resource.
    revision: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=1)
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    # 'instance' or 'host' while attached through /v1; attach_state is
    # 'attaching' while the work runs, then 'attached'.
    attach_type: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    attach_state: orm.Mapped[str | None] = orm.mapped_column(sa.String(16))
    attached_to: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    arq_uuid: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))

    deployable: orm.Mapped[Deployable | None] = orm.relationship(
        back_populates='accelerator')


class Service(Base):
    """Liveness of one Cyborg process (conductor or agent) on one host."""

    __tablename__ = 'services'
    __table_args__ = (
        sa.UniqueConstraint('host', 'binary',
                            name='uniq_services0host0binary'),
        _TABLE_ARGS,
    )

    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    binary: orm.Mapped[str] = orm.mapped_column(sa.String(64),
                                                nullable=False)
    topic: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    version: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    # The RPC API version the service serves (its manager's target); NULL
    # for a service of a release that did not record it.
    rpc_version: orm.Mapped[str | None] = orm.mapped_column(sa.String(32))
    report_count: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    last_seen_up: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime)
    disabled: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, nullable=False, default=False)
    disabled_reason: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    # Agents only: the generation of the last inventory the conductor
    # applied, the agent's report interval and its enabled drivers (JSON).
    report_generation: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    report_interval: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    drivers: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Agents only: the drivers (as devices name them) that scrub a
    # deployable when its last accelerator request unbinds (JSON).
    scrubbing_drivers: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Agents only (JSON): every driver installed on the host, enabled or
    # not, as [{'name', 'driver_name', 'version'}].
    available_drivers: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    # Seconds the service's clock was ahead of the database server's
    # (negative: behind) at its last heartbeat; NULL where not measured
    # (agents, and releases before the measure).
    clock_skew: orm.Mapped[float | None] = orm.mapped_column(sa.Float)
