"""Options of the [api] group: the REST service."""

import os

from oslo_config import cfg

GROUP = cfg.OptGroup('api', title='REST API options')

_SERVICE_TOKEN_REASON = ('Whether a request has a service token is the '
                         'cyborg:arq:service_token policy rule, which a '
                         'policy file can set like any other.')

opts = [
    cfg.HostAddressOpt(
        'host_ip',
        default='127.0.0.1',
        help='Address the cyborg-api and cyborg-all-in-one HTTP server '
             'listens on. Use 0.0.0.0 to listen on every interface.'),
    cfg.PortOpt(
        'port',
        default=6666,
        help='TCP port the HTTP server listens on.'),
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=[('keystone', 'Validate tokens with keystonemiddleware.'),
                 ('noauth', 'No authentication: the request context is '
                            'built from the identity headers as sent. For '
                            'the embedded default and tests only.')],
        help='How API requests are authenticated.'),
    cfg.URIOpt(
        'public_endpoint',
        help='Public URL of the API, used in the links of responses. When '
             'unset, links are built from the URL the request came in on. '
             'Set it when Cyborg runs behind a proxy that rewrites URLs.'),
    cfg.IntOpt(
        'workers',
        min=1,
        sample_default='8 per CPU, at least 16',
        help='Number of threads the built-in HTTP server (cyborg-api, '
             'cyborg-all-in-one) uses to answer requests concurrently. '
             'Most of a request is spent waiting for a conductor, so '
             'threads are cheap; with one thread a single request that '
             'waits for a silent conductor holds every other client. '
             'Unset: 8 per CPU of the machine, at least 16. Under uWSGI '
             'or gunicorn their own processes and threads settings apply '
             'instead (see the high availability guide).'),
    cfg.BoolOpt(
        'enable_proxy_headers_parsing',
        default=False,
        help='Trust the X-Forwarded-* headers of a TLS-terminating proxy '
             'when building URLs (http_proxy_to_wsgi).'),
    cfg.IntOpt(
        'max_limit',
        default=1000,
        min=1,
        help='The most items one page of a list holds (from microversion '
             '2.4, lists are paged: limit, marker, sort_key, sort_dir and a '
             'next link). A larger limit asked for is cut to this.'),
    cfg.IntOpt(
        'rpc_timeout',
        default=10,
        min=1,
        help='Seconds the API waits for a conductor to answer a request '
             'before it answers 503 Service Unavailable with a Retry-After '
             'header, instead of waiting the transport\'s '
             'rpc_response_timeout. Requests that wait for an agent '
             '(programming, driver installation, activation) keep their '
             'own, longer, timeouts. A message broker that cannot be '
             'reached fails a request at once (after one reconnection, '
             'about 2 to 4 seconds), whatever this says; an API that has '
             'not reached the broker since it started answers 503 after '
             'this many seconds.'),
    cfg.IntOpt(
        'rpc_call_monitor_timeout',
        default=4,
        min=0,
        help='Seconds a call the API sends to the conductors that may run '
             'twice (a read, a bind, a create, a delete of an instance\'s '
             'accelerator requests) may '
             'go without its answer, or without the conductor\'s word '
             'that it is still working on it (oslo.messaging\'s call '
             'monitor heartbeat, sent every half of this), before the API '
             'sends it again for another conductor to answer, within '
             '[api] rpc_timeout. A conductor that stopped without closing '
             'its connection to the broker (a hung host, SIGSTOP) holds '
             'the calls dealt to it this long instead of answering them '
             '503 after rpc_timeout. Other writes (a delete by uuid, an '
             'unbind) are never sent twice. 0 turns '
             'this off; 1 counts as 2, the least oslo.messaging '
             'accepts.'),
    cfg.ListOpt(
        'binding_service_roles',
        default=['service'],
        deprecated_for_removal=True,
        deprecated_since='2026.2',
        deprecated_reason=_SERVICE_TOKEN_REASON,
        help='Roles a service token (X-Service-Token, as Nova sends it) '
             'must carry one of for binding, unbinding and deleting bound '
             'accelerator requests. It only shapes the default of the '
             'cyborg:arq:service_token policy rule.'),
    cfg.BoolOpt(
        'require_service_token',
        default=True,
        deprecated_for_removal=True,
        deprecated_since='2026.2',
        deprecated_reason=_SERVICE_TOKEN_REASON,
        help='Refuse binding, unbinding and deleting bound accelerator '
             'requests without a service token. Turning it off lets any '
             'member of a project change the bindings of its instances, '
             'which a tenant could use to take devices from under Nova. '
             'It only shapes the default of the cyborg:arq:service_token '
             'policy rule ("@" when off).'),
]


def worker_threads(conf) -> int:
    """``[api] workers``, or the machine's share when unset."""
    if conf.api.workers:
        return conf.api.workers
    return max(16, 8 * (os.cpu_count() or 1))


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
