"""Plain data a driver's discover() returns, and its wire form for RPC.

Drivers return these objects; they never touch the database or RPC. The agent
sends ``HostReport.to_primitive()`` to the conductor, which rebuilds it with
``HostReport.from_primitive()``.
"""

import dataclasses
import json
import typing
import uuid as uuidlib


def provider_uuid(name):
    """The Placement provider uuid of the deployable called ``name``.

    Deployable names carry the host, so they are unique across hosts; the
    same derivation as upstream Cyborg lets an upgraded agent adopt the
    providers upstream created.
    """
    return str(uuidlib.uuid3(uuidlib.NAMESPACE_DNS, name))


class DeviceKey(typing.NamedTuple):
    """A device's identity on its host: its control path.

    ``cpid_info`` is the JSON of the control path's info (sorted keys), as
    the database stores it. Being a tuple, a key equals (and hashes as) the
    ``(cpid_type, cpid_info)`` pairs older code used. On the wire it is a
    list ``[cpid_type, cpid_info]``; in JSON object keys it is ``text()``.
    """

    cpid_type: str
    cpid_info: str

    @classmethod
    def of(cls, cpid_type, cpid_info):
        """The key of a control path whose info is a dict or its JSON."""
        if not isinstance(cpid_info, str):
            cpid_info = json.dumps(cpid_info, sort_keys=True)
        return cls(cpid_type, cpid_info)

    @classmethod
    def parse(cls, value):
        """A key from its text form, its wire list or another key.

        Accepts the encodings earlier releases wrote (a list whose info is
        a dict, JSON with other key orders), so old caches and old agents'
        reports read as the same key.

        :raises ValueError: ``value`` is no device key.
        """
        if isinstance(value, str):
            value = json.loads(value)
        if not isinstance(value, (list, tuple)) or len(value) != 2 or \
                not isinstance(value[0], str):
            raise ValueError('not a device key: %r' % (value,))
        info = value[1]
        if isinstance(info, str):
            # NOTE(report): normalise the JSON itself (key order, spaces).
            try:
                info = json.loads(info)
            except ValueError:
                return cls(value[0], info)
        return cls(value[0], json.dumps(info, sort_keys=True))

    def text(self):
        """The one string form, for JSON object keys and logs."""
        return json.dumps(list(self))

    def wire(self):
        """The form RPC messages carry: ``[cpid_type, cpid_info]``."""
        return list(self)


@dataclasses.dataclass
class AttachHandle:
    """One thing Nova can attach to an instance."""

    attach_type: str
    attach_info: dict
    in_use: bool = False

    @property
    def key(self):
        """Identity of the handle within its deployable."""
        return json.dumps(self.attach_info, sort_keys=True)


@dataclasses.dataclass
class Deployable:
    """An assignable unit: one Placement provider with one resource class."""

    name: str
    num_accelerators: int
    resource_class: str
    traits: list = dataclasses.field(default_factory=list)
    attach_handles: list = dataclasses.field(default_factory=list)
    driver_name: str | None = None

    def attributes(self):
        """The attribute rows as upstream names them: rc, trait0..N."""
        attrs = {'rc': self.resource_class}
        for index, trait in enumerate(sorted(self.traits)):
            attrs['trait%d' % index] = trait
        return attrs


@dataclasses.dataclass
class ControlPath:
    """How the host manages the device: its PF's PCI address."""

    cpid_type: str
    cpid_info: dict

    @property
    def key(self):
        return json.dumps(self.cpid_info, sort_keys=True)


@dataclasses.dataclass
class Device:
    """A physical accelerator card and what it offers."""

    type: str
    vendor: str
    model: str
    controlpath: ControlPath
    std_board_info: dict = dataclasses.field(default_factory=dict)
    vendor_board_info: dict = dataclasses.field(default_factory=dict)
    deployables: list = dataclasses.field(default_factory=list)
    driver_name: str | None = None
    #: What the backend offers, e.g. 'crypto.sym', 'compression',
    #: 'fpga.function:<id>', 'gpu.compute', 'vgpu:<type>'.
    services: list = dataclasses.field(default_factory=list)
    #: None unless ``health`` is 'failed', then its reason: what
    #: conductors older than health states read.
    fault: str | None = None
    #: What of the device could not be read (sysfs paths and why): the
    #: device is reported with what could be, and these say what is not.
    warnings: list = dataclasses.field(default_factory=list)
    #: 'ok', 'degraded', 'failed' or 'unknown', set by the agent from the
    #: driver's health check on every pass (``base.STATES``).
    health: str = 'ok'
    #: What the health check found, one line; None when nothing.
    health_reason: str | None = None
    #: The checks that ran ('pci', 'aer', 'link', 'hwmon', 'qat', 'dfl',
    #: 'nvml'), in the order they ran.
    health_sources: list = dataclasses.field(default_factory=list)
    #: The partition modes the hardware offers, sorted: ``passthrough``,
    #: ``vgpu:<type>``, ``sriov-vgpu:<type>``. Empty for drivers whose
    #: devices have one arrangement only.
    modes: list = dataclasses.field(default_factory=list)
    #: The mode the device is in now; None when it has no modes or its
    #: arrangement is none of them (several vGPU types at once).
    mode: str | None = None
    #: Why the device offers nothing, one line saying what an operator
    #: can do about it; None when it offers something (a deployable).
    offer_reason: str | None = None

    @property
    def key(self):
        """Identity of the device on its host: its control path."""
        return DeviceKey(self.controlpath.cpid_type, self.controlpath.key)


@dataclasses.dataclass
class HostReport:
    """Everything one agent found on its host in one discovery pass."""

    host: str
    devices: list = dataclasses.field(default_factory=list)

    def to_primitive(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_primitive(cls, data):
        devices = []
        for dev in data.get('devices', []):
            deployables = [
                Deployable(
                    name=dep['name'],
                    num_accelerators=int(dep['num_accelerators']),
                    resource_class=dep['resource_class'],
                    traits=list(dep.get('traits', [])),
                    attach_handles=[AttachHandle(**h)
                                    for h in dep.get('attach_handles', [])],
                    driver_name=dep.get('driver_name'))
                for dep in dev.get('deployables', [])]
            devices.append(Device(
                type=dev['type'], vendor=dev['vendor'], model=dev['model'],
                controlpath=ControlPath(**dev['controlpath']),
                std_board_info=dict(dev.get('std_board_info') or {}),
                vendor_board_info=dict(dev.get('vendor_board_info') or {}),
                deployables=deployables,
                driver_name=dev.get('driver_name'),
                services=list(dev.get('services', [])),
                fault=dev.get('fault'),
                warnings=list(dev.get('warnings') or []),
                # NOTE(report): agents older than health states send none
                # of these; their devices are as healthy as their fault.
                health=dev.get('health') or (
                    'failed' if dev.get('fault') else 'ok'),
                health_reason=dev.get('health_reason', dev.get('fault')),
                health_sources=list(dev.get('health_sources') or []),
                # NOTE(report): agents older than partition modes send
                # neither: their devices have no modes.
                modes=list(dev.get('modes') or []),
                mode=dev.get('mode'),
                offer_reason=_offer_reason(dev, deployables)))
        return cls(host=data['host'], devices=devices)


#: The offer reason of a device that offers nothing and does not say why.
UNEXPLAINED = ('the %s driver reports no deployable for it and no reason '
               '(an agent older than offer reasons, or a driver that does '
               'not give them): see the agent log of its host')


def _offer_reason(dev, deployables):
    """A reported device's offer reason; one that offers nothing always
    has one."""
    if deployables:
        return None
    # NOTE(report): agents older than offer reasons send none; the device
    # still says that it offers nothing, and where to look.
    return dev.get('offer_reason') or UNEXPLAINED % (
        dev.get('driver_name') or 'unknown')
