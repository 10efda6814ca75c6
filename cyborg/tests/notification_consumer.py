"""A consumer of Cyborg's versioned notifications, and config file edits."""

import configparser
import threading

from oslo_config import cfg
import oslo_messaging as messaging

TIMEOUT = 60


class Consumer:
    """oslo.messaging's notification listener on the deployment's vhost,
    recording what it receives as ``{event_type, priority, publisher_id,
    payload}``."""

    def __init__(self, transport_url):
        self.received = []
        self._changed = threading.Condition()
        # NOTE(tests): a configuration of its own: the test process's
        # global CONF belongs to the unit tests' fixtures.
        conf = cfg.ConfigOpts()
        conf([], project='cyborg-notification-consumer')
        self._transport = messaging.get_notification_transport(
            conf, url=transport_url)
        self._listener = messaging.get_notification_listener(
            self._transport,
            [messaging.Target(topic='versioned_notifications',
                              exchange='cyborg')],
            [self], executor='threading')
        self._listener.start()

    def _record(self, priority, publisher_id, event_type, payload):
        with self._changed:
            self.received.append({'event_type': event_type,
                                  'priority': priority,
                                  'publisher_id': publisher_id,
                                  'payload': payload})
            self._changed.notify_all()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record('INFO', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record('ERROR', publisher_id, event_type, payload)

    def wait(self, event_type, count=1, **fields):
        """The first ``count`` notifications of ``event_type`` whose payload
        data has ``fields``, once that many arrived."""
        def matching():
            return [n for n in self.received
                    if n['event_type'] == event_type and all(
                        data(n).get(k) == v for k, v in fields.items())]
        with self._changed:
            arrived = self._changed.wait_for(
                lambda: len(matching()) >= count, TIMEOUT)
            found = matching()
        assert arrived, 'only %d %s of %d arrived; received: %s' % (
            len(found), event_type, count,
            sorted({n['event_type'] for n in self.received}))
        return found[:count]

    def stop(self):
        self._listener.stop()
        self._listener.wait()
        self._transport.cleanup()


def data(notification):
    return notification['payload']['cyborg_object.data']


def option(config_file, section, name):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(config_file)
    return parser.get(section, name)


def set_option(config_file, section, name, value):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(config_file)
    parser.set(section, name, str(value))
    with open(config_file, 'w') as out:
        parser.write(out)
