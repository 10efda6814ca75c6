"""Options of the [notifications] group: Cyborg's versioned notifications."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'notifications', title='Versioned notifications',
    help='Cyborg sends versioned notifications of device, accelerator '
         'request, driver, programming, drain and scrub events through '
         'oslo.messaging\'s notifier. They are sent only when both this '
         'group allows them and [oslo_messaging_notifications] driver '
         'names a driver that sends (messagingv2 for a message broker); '
         'that group\'s transport_url and retry apply to them too.')

opts = [
    cfg.StrOpt(
        'notification_format',
        default='versioned',
        choices=[
            ('versioned', 'Send versioned notifications (payloads are '
                          'versioned objects) on '
                          'versioned_notifications_topics.'),
            ('none', 'Send no notification, whatever '
                     '[oslo_messaging_notifications] driver says.'),
        ],
        help='Which notifications Cyborg sends. Nothing is sent either way '
             'while [oslo_messaging_notifications] driver is empty or '
             '"noop", its default.'),
    cfg.ListOpt(
        'versioned_notifications_topics',
        default=['versioned_notifications'],
        help='Topics versioned notifications are sent on; with the '
             'messagingv2 driver each becomes the RabbitMQ queues '
             '<topic>.info and <topic>.error. This replaces '
             '[oslo_messaging_notifications] topics, which is left to '
             'other notifications.'),
    cfg.BoolOpt(
        'notify_on_inventory_change',
        default=True,
        help='Send accelerator.device.create, .update and .delete when an '
             'agent\'s report adds, changes or removes devices. Status, '
             'health and operator actions are sent either way. A cloud '
             'whose hosts report tens of thousands of devices at once may '
             'turn this off to keep its broker quiet during boot storms.'),
    cfg.IntOpt(
        'max_queued',
        default=10000,
        min=1,
        help='Notifications waiting to be sent, at most. Each process '
             'sends them from a thread of its own, so that a slow or '
             'unreachable broker never delays the operation they tell of; '
             'while this many wait, newer ones are dropped and a warning '
             'is logged.'),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
