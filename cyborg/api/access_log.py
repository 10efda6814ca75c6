"""One log line per API request: what was asked, the answer and its time."""

import time

from oslo_log import log as logging

from cyborg.api import microversion

LOG = logging.getLogger(__name__)


class AccessLog:
    """Logs each request as Nova's and Placement's APIs do.

    ``"PATCH /v2/accelerator_requests" status: 202 len: 0 microversion:
    2.0 time: 0.012345``, with the request id. The time runs until the
    application returned its response, so it is the API's own time, not
    the network's. Load balancers' healthchecks are logged at DEBUG only:
    every few seconds from each balancer, they would drown the rest.
    """

    def __init__(self, application, healthcheck_path):
        self.application = application
        self.healthcheck_path = healthcheck_path

    def __call__(self, environ, start_response):
        started = time.monotonic()
        answer = {}

        def recording_start_response(status, headers, exc_info=None):
            answer['status'] = status.split(' ', 1)[0]
            answer['len'] = next((value for name, value in headers
                                  if name.lower() == 'content-length'), '-')
            return start_response(status, headers, exc_info)

        try:
            return self.application(environ, recording_start_response)
        finally:
            self._log(environ, answer, time.monotonic() - started)

    def _log(self, environ, answer, seconds):
        path = environ.get('PATH_INFO', '')
        query = environ.get('QUERY_STRING')
        version = environ.get(microversion.ENVIRON_KEY)
        healthcheck = path.rstrip('/') == self.healthcheck_path
        (LOG.debug if healthcheck else LOG.info)(
            '%(remote)s "%(method)s %(uri)s" status: %(status)s len: '
            '%(len)s microversion: %(version)s time: %(time).6f '
            '%(request_id)s',
            {'remote': environ.get('REMOTE_ADDR', '-'),
             'method': environ.get('REQUEST_METHOD'),
             'uri': path + ('?' + query if query else ''),
             'status': answer.get('status', '-'),
             'len': answer.get('len', '-'),
             'version': version or '-', 'time': seconds,
             'request_id': environ.get('openstack.request_id', '-')})
