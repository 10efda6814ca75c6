"""The agent's device telemetry: samples on demand, served to Prometheus."""

import dataclasses
import datetime
import json
import math
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_service import service
from prometheus_client import core
from prometheus_client import exposition
from prometheus_client import registry

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.drivers.report import DeviceKey
from cyborg.drivers.report import provider_uuid

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

#: Every family this exporter serves starts with it.
PREFIX = 'cyborg_device_'
#: Labels of every per-device sample, in this order.
LABELS = ('uuid', 'address', 'host', 'vendor', 'model', 'driver')
#: What ``health`` may be; ``cyborg_device_health`` has one sample each.
HEALTH_STATES = ('ok', 'degraded', 'failed', 'unknown')
HEALTH = PREFIX + 'health'
BOUND_ARQS = PREFIX + 'bound_arqs'
_HEALTH_HELP = ('Health of the device as its driver last checked it: 1 '
                'for the state it is in, 0 for the others.')
_BOUND_HELP = ('Accelerator units of the device\'s deployables that '
               'Placement has allocated, one per bound (or binding) ARQ.')


def series() -> dict:
    """The drivers' telemetry series: name -> (help, 'gauge'|'counter')."""
    # NOTE(metrics): imported when first used: the drivers' module is
    # written alongside this one and the agent needs it only to serve.
    from cyborg.drivers import telemetry
    return telemetry.SERIES


def family(name: str) -> str:
    """The Prometheus family name of a drivers' series."""
    return PREFIX + name


def sample_names() -> set:
    """Every sample name the exporter can emit (what queries may name)."""
    names = {HEALTH, BOUND_ARQS}
    for name, (_help, kind) in series().items():
        # NOTE(metrics): prometheus_client names a counter's family
        # without _total and its samples with it.
        names.add(family(name) if kind == 'gauge' or name.endswith('_total')
                  else family(name) + '_total')
    return names


def address(key) -> str:
    """A device's control path as people read it: the PCI address."""
    info = DeviceKey.parse(key).cpid_info
    try:
        parts = json.loads(info)
        return '%s:%s:%s.%s' % (parts['domain'], parts['bus'],
                                parts['device'], parts['function'])
    except (ValueError, KeyError, TypeError):
        # NOTE(metrics): not a PCI address: the control path as stored.
        return info


@dataclasses.dataclass
class Sample:
    """One device's telemetry at one moment."""

    key: str
    labels: dict
    metrics: dict
    health: str
    health_reason: str | None
    health_sources: list
    sampled_at: datetime.datetime
    bound_arqs: int | None = None

    def to_primitive(self) -> dict:
        """What the agent answers over RPC (``device_metrics``)."""
        return {'metrics': dict(self.metrics), 'health': self.health,
                'health_reason': self.health_reason,
                'health_sources': list(self.health_sources),
                'sampled_at': self.sampled_at.isoformat()}


class Sampler:
    """Samples the devices of the agent's last discovery pass.

    ``manager`` is the ``AgentManager``: its ``_found`` (device key text ->
    ``report.Device``), ``tracker`` (the drivers), ``host``,
    ``last_result`` and ``placement`` are read, never changed. A sample is
    served again for ``[agent] metrics_max_age`` seconds.
    """

    def __init__(self, manager, clock=time.monotonic):
        self.manager = manager
        self.clock = clock
        self._lock = threading.Lock()
        self._cache = {}
        #: Device key text -> uuid, from what the conductor sent.
        self.uuids = {}

    # --- Device uuids ------------------------------------------------------

    def learn(self, devices) -> None:
        """Remember the uuids of ``[{'uuid', 'controlpath'}]``."""
        for device in devices or ():
            if device.get('uuid') and device.get('controlpath'):
                key = DeviceKey.parse(device['controlpath']).text()
                self.uuids[key] = device['uuid']

    def refresh_uuids(self) -> None:
        """Ask the conductor for the uuids of devices this agent does not
        know the uuid of (an agent restarted on an unchanged host hears
        none); a periodic task while the endpoint is served."""
        self.learn((self.manager.last_result or {}).get('devices'))
        if not set(self.manager._found) - set(self.uuids) or \
                self.manager.conductor is None:
            return None
        try:
            self.learn(self.manager.conductor.device_states(
                cyborg_context.get_admin_context(), self.manager.host,
                timeout=self.manager._timeout()))
        except (messaging.MessagingException,
                exception.CyborgException) as exc:
            LOG.debug('Device uuids not known yet: %s', exc)
        return None

    # --- Samples -------------------------------------------------------------

    def sample(self, key, bound=False) -> Sample:
        """The latest sample of one device (a key in any encoding).

        :raises DeviceMetricsUnavailable: the last discovery pass did not
            find it on this host.
        """
        text = DeviceKey.parse(key).text()
        device = self.manager._found.get(text)
        if device is None:
            raise exception.DeviceMetricsUnavailable(
                uuid=text, reason='the last discovery on host %s did not '
                'find it' % self.manager.host)
        with self._lock:
            return self._fresh(text, device, bound)

    def samples(self) -> list:
        """A sample of every device found, with its bound ARQs."""
        found = dict(self.manager._found)
        with self._lock:
            for gone in set(self._cache) - set(found):
                del self._cache[gone]
            return [self._fresh(key, device, True)
                    for key, device in sorted(found.items())]

    def _fresh(self, key, device, bound):
        now = self.clock()
        cached = self._cache.get(key)
        # NOTE(metrics): an entry is (when, device, sample, whether
        # Placement was asked); one that asked, even in vain, serves
        # scrapes, so an outage of Placement does not bypass the cache.
        if cached is not None and cached[1] is device and \
                now - cached[0] < CONF.agent.metrics_max_age and \
                (cached[3] or not bound):
            return cached[2]
        taken = self._take(key, device, bound)
        self._cache[key] = (now, device, taken, bound)
        return taken

    def _take(self, key, device, bound):
        health = getattr(device, 'health', None) or 'unknown'
        if health not in HEALTH_STATES:
            health = 'unknown'
        return Sample(
            key=key, labels=self._labels(key, device),
            metrics=self._metrics(device), health=health,
            health_reason=getattr(device, 'health_reason', None),
            health_sources=list(getattr(device, 'health_sources', None)
                                or ()),
            sampled_at=datetime.datetime.now(datetime.timezone.utc),
            bound_arqs=self._bound(device) if bound else None)

    def _labels(self, key, device):
        if key not in self.uuids:
            self.learn((self.manager.last_result or {}).get('devices'))
        return {'uuid': self.uuids.get(key, ''), 'address': address(key),
                'host': self.manager.host, 'vendor': device.vendor or '',
                'model': device.model or '',
                'driver': device.driver_name or ''}

    def _metrics(self, device):
        known = series()
        try:
            driver = self.manager.tracker.driver_named(device.driver_name)
            values = driver.metrics(device) or {}
        except Exception as exc:  # noqa: BLE001 - a sample is best effort
            LOG.warning('Telemetry of %s by driver %s failed: %s',
                        device.controlpath.cpid_info, device.driver_name,
                        exc)
            return {}
        result = {}
        for name, value in values.items():
            if name not in known or isinstance(value, bool):
                continue
            try:
                value = float(value)
            except (TypeError, ValueError):
                continue
            if math.isfinite(value):
                result[name] = value
        return result

    def _bound(self, device):
        """Units Placement allocated on the device's deployables; None
        when this agent does not use Placement or it did not answer."""
        placement = self.manager.placement
        if placement is None:
            return None
        total = 0
        try:
            for dep in device.deployables:
                usages = placement.client.get_usages(provider_uuid(dep.name))
                total += int(usages.get(dep.resource_class, 0))
        except Exception as exc:  # noqa: BLE001 - one series, not the scrape
            LOG.debug('No usages of %s in Placement: %s',
                      device.controlpath.cpid_info, exc)
            return None
        return total


class DeviceCollector(registry.Collector):
    """Yields every family on each scrape, from ``Sampler.samples()``."""

    def __init__(self, sampler):
        self.sampler = sampler

    def describe(self) -> list:
        """The families without samples: registering samples nothing."""
        return list(self._families([]))

    def collect(self):
        return self._families(self.sampler.samples())

    @staticmethod
    def _families(samples):
        for name, (doc, kind) in series().items():
            cls = (core.CounterMetricFamily if kind == 'counter'
                   else core.GaugeMetricFamily)
            found = cls(family(name), doc, labels=LABELS)
            for taken in samples:
                if name in taken.metrics:
                    found.add_metric(_values(taken), taken.metrics[name])
            yield found
        health = core.GaugeMetricFamily(HEALTH, _HEALTH_HELP,
                                        labels=LABELS + ('state',))
        for taken in samples:
            for state in HEALTH_STATES:
                health.add_metric(_values(taken) + [state],
                                  1.0 if taken.health == state else 0.0)
        yield health
        bound = core.GaugeMetricFamily(BOUND_ARQS, _BOUND_HELP,
                                       labels=LABELS)
        for taken in samples:
            if taken.bound_arqs is not None:
                bound.add_metric(_values(taken), taken.bound_arqs)
        yield bound


def _values(taken):
    return [taken.labels[name] for name in LABELS]


def parse_listen(value: str) -> tuple:
    """``(host, port)`` of ``[agent] metrics_listen``.

    :raises ConfigError: not host:port.
    """
    host, sep, port = value.rpartition(':')
    host = host[1:-1] if host.startswith('[') and host.endswith(']') \
        else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise exception.ConfigError(
            option='[agent] metrics_listen',
            reason='%r is not host:port' % value)
    return host, int(port)


class MetricsService(service.Service):
    """Serves ``GET /metrics`` with prometheus_client's HTTP server."""

    def __init__(self, sampler, listen):
        super().__init__()
        self.listen = parse_listen(listen)
        self.registry = registry.CollectorRegistry()
        self.registry.register(DeviceCollector(sampler))
        self.server = None
        self._thread = None

    @property
    def port(self) -> int:
        """The port listened on (the one the system chose for port 0)."""
        return self.server.server_port

    def start(self):
        super().start()
        host, port = self.listen
        try:
            self.server, self._thread = exposition.start_http_server(
                port, addr=host, registry=self.registry)
        except OSError as exc:
            raise exception.ConfigError(
                option='[agent] metrics_listen',
                reason='cannot listen on %s:%s (%s)' % (
                    host, port, exc.strerror or exc)) from exc
        LOG.info('Serving device telemetry on http://%s:%d/metrics',
                 host, self.port)

    def stop(self, graceful=True):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        super().stop(graceful=graceful)

    def wait(self):
        if self._thread is not None:
            self._thread.join()


def services(manager) -> list:
    """The services that serve the manager's telemetry (none when
    ``[agent] metrics_listen`` is empty)."""
    if not CONF.agent.metrics_listen:
        return []
    return [MetricsService(manager.telemetry, CONF.agent.metrics_listen)]
