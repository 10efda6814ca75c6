"""The agent's files on disk, read back from any key encoding they hold."""

import json
import os
import tempfile
import threading

from oslo_log import log as logging

from cyborg.drivers.report import DeviceKey

LOG = logging.getLogger(__name__)


def device_key(device_primitive):
    """The identity of a reported device (as a primitive), as text."""
    path = device_primitive['controlpath']
    return DeviceKey.of(path['cpid_type'], path['cpid_info']).text()


def key_of(device):
    """The same identity for a ``report.Device``."""
    return device.key.text()


def text_key(key):
    """A device key, in any encoding an earlier release wrote, as today's
    text; None when it is no device key."""
    try:
        return DeviceKey.parse(key).text()
    except ValueError:
        return None


def text_keys(mapping, what, path):
    """``mapping`` with its device keys in today's text form.

    NOTE(agent): files an earlier release wrote may encode keys otherwise;
    a key that is none is dropped (and rebuilt by the next report).
    """
    result = {}
    for key, value in mapping.items():
        text = text_key(key)
        if text is None:
            LOG.warning('Ignoring device key %r of %s %s', key, what, path)
        else:
            result[text] = value
    return result


def placement_state(path, name):
    """The Placement state ``ProviderTree`` saved in ``path``, its device
    keys in today's text form.

    :param name: the compute node provider's name now; the root and the
        providers recorded under another name are not this host's any more.
    :returns: ``root`` and ``providers``, the conductor's ``statuses``,
        ``extra_traits``, ``taken`` and ``decided`` by device key, and the
        set of ``released`` keys; empty where nothing was saved.
    """
    what = 'Placement state'
    data = read_json(path, what) or {}
    mine = data.get('name') == name
    providers = dict(data.get('providers') or {}) if mine else {}
    for record in providers.values():
        if record.get('device'):
            # NOTE(agent): a provider whose key is unreadable stays, as one
            # of no known device, so that it is retired like a gone one.
            record['device'] = text_key(record['device'])
    state = {field: text_keys(dict(data.get(field) or {}), what, path)
             for field in ('statuses', 'extra_traits', 'taken', 'decided')}
    released = dict.fromkeys(data.get('released') or ())
    state.update(root=data.get('root') if mine else None,
                 providers=providers,
                 released=set(text_keys(released, what, path)))
    return state


class ReportCache:
    """What this host's conductor-side inventory holds, kept on disk.

    ``generation`` and ``devices`` (device key → device primitive) change
    only after the conductor applied a report, so while the conductor is
    unreachable the agent keeps discovering and, when it returns, sends
    the difference from what was last applied: nothing is lost and nothing
    is sent twice. The file survives agent restarts.

    ``identity`` is what the agent said of itself in that report (its
    ``version`` and ``rpc_version``), so that an upgraded agent knows that
    the conductor has not recorded its new versions yet.
    """

    def __init__(self, path):
        self.path = path
        self.generation = None
        self.devices = {}
        self.identity = None
        self._load()

    def _load(self):
        data = read_json(self.path, 'report cache')
        if data is None:
            return
        generation, devices = data.get('generation'), data.get('devices')
        if not isinstance(devices, dict) or not isinstance(generation, int):
            LOG.warning('Ignoring report cache %s: unexpected layout',
                        self.path)
            return
        self.generation = generation
        self.devices = text_keys(devices, 'report cache', self.path)
        identity = data.get('identity')
        self.identity = identity if isinstance(identity, dict) else None

    def diff(self, devices, keep_drivers=()):
        """What changed between the applied inventory and ``devices``.

        :param devices: device primitives found now.
        :param keep_drivers: drivers that failed this pass; their cached
            devices are not taken as removed.
        :returns: ``(changed primitives, removed keys, current mapping)``
        """
        current = {device_key(dev): dev for dev in devices}
        for key, dev in self.devices.items():
            if key not in current and dev.get('driver_name') in keep_drivers:
                current[key] = dev
        changed = [dev for key, dev in current.items()
                   if self.devices.get(key) != dev]
        removed = [DeviceKey.parse(key).wire() for key in self.devices
                   if key not in current]
        return changed, removed, current

    def applied(self, generation, current, identity=None):
        """Record that the conductor applied ``current`` at ``generation``
        (and the agent's ``identity`` with it)."""
        self.generation = generation
        self.devices = current
        self.identity = identity
        self._save()

    def _save(self):
        write_json(self.path, {'generation': self.generation,
                               'devices': self.devices,
                               'identity': self.identity})


class HandleCache:
    """Which ARQ each handle this agent prepared is for, kept on disk.

    A conductor that adopts a dead one's bind repeats its host-side work;
    the agent finds the handle already prepared for that ARQ and leaves
    it. A release sent for an ARQ that no longer holds the handle (it was
    rebound since) is ignored, so another ARQ's mdev is never removed.
    """

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        data = read_json(path, 'handle cache') or {}
        holders = data.get('holders')
        self._holders = holders if isinstance(holders, dict) else {}

    def holder(self, handle_uuid):
        """The ARQ the handle was prepared for; None if not known."""
        with self._lock:
            return self._holders.get(handle_uuid)

    def hold(self, handle_uuid, arq_uuid):
        """Record that the handle is prepared for ``arq_uuid`` (None: for
        an ARQ a conductor did not name)."""
        with self._lock:
            if arq_uuid is None:
                self._holders.pop(handle_uuid, None)
            else:
                self._holders[handle_uuid] = arq_uuid
            write_json(self.path, {'holders': self._holders})

    def forget(self, handle_uuid):
        """The handle was released."""
        self.hold(handle_uuid, None)


def read_json(path, what):
    """The JSON object in ``path``; None when absent or unreadable."""
    try:
        with open(path) as handle:
            data = json.load(handle)
        if not isinstance(data, dict):
            raise ValueError('not a JSON object')
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        # NOTE(agent): a damaged file costs a rebuild, never the agent.
        LOG.warning('Ignoring unreadable %s %s: %s', what, path, exc)
        return None
    return data


def write_json(path, data):
    """Replace ``path`` with ``data`` so a crash leaves old or new whole."""
    directory = os.path.dirname(path) or '.'
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.cyborg-', dir=directory)
    try:
        with os.fdopen(fd, 'w') as handle:
            json.dump(data, handle, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
