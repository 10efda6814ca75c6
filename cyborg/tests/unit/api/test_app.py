"""The WSGI application: middleware, auth strategies, the WSGI entry."""

import logging
import os
import re
import subprocess
import sys
import textwrap

import pytest
import webtest

from cyborg import conf as cyborg_conf
from cyborg import policy
from cyborg.api import app as api_app
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import fault

CONF = cyborg_conf.CONF


def test_request_id_on_every_response(api):
    for path, status in (('/', 200), ('/v2', 200), ('/v2/nothing', 404),
                         ('/healthcheck', 200)):
        response = api.get(path, headers=ADMIN, status=status)
        assert response.headers['x-openstack-request-id'].startswith('req-')


def test_healthcheck(api):
    response = api.get('/healthcheck')
    assert response.status_int == 200
    assert 'OpenStack-API-Version' not in response.headers


def test_cors_preflight(api, override):
    override('allowed_origin', ['https://dashboard.example'], group='cors')
    app = webtest.TestApp(api_app.setup_app())
    response = app.options('/v2/devices', headers={
        'Origin': 'https://dashboard.example',
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'OpenStack-API-Version'})
    assert response.headers['Access-Control-Allow-Origin'] == (
        'https://dashboard.example')


def test_body_size_limit_is_an_envelope(api, override):
    override('max_request_body_size', 10, group='oslo_middleware')
    response = api.post('/v2/devices', params='x' * 100, headers=ADMIN,
                        content_type='application/json', expect_errors=True)
    assert response.status_int == 413
    assert fault(response)['faultcode'] == 'Client'


def test_proxy_headers_when_enabled(db, override):
    override('auth_strategy', 'noauth', group='api')
    override('enable_proxy_headers_parsing', True, group='api')
    app = webtest.TestApp(api_app.setup_app())
    body = app.get('/', headers={'X-Forwarded-Proto': 'https',
                                 'X-Forwarded-Host': 'api.example'}).json
    assert body['versions'][0]['links'][0]['href'] == (
        'https://api.example/v2')


def test_proxy_headers_ignored_by_default(api):
    body = api.get('/', headers={'X-Forwarded-Proto': 'https'}).json
    assert body['versions'][0]['links'][0]['href'].startswith('http://')


@pytest.fixture
def keystone_api(db, override):
    override('auth_strategy', 'keystone', group='api')
    api_app.setup_app()  # registers [keystone_authtoken]
    override('www_authenticate_uri', 'https://keystone.example/identity',
             group='keystone_authtoken')
    policy.reset()
    yield webtest.TestApp(api_app.setup_app())
    policy.reset()


def test_keystone_leaves_discovery_public(keystone_api):
    assert keystone_api.get('/').status_int == 200
    assert keystone_api.get('/v2').status_int == 200
    assert keystone_api.get('/v2/').status_int == 200


def test_keystone_requires_a_token(keystone_api):
    for path in ('/v2/devices', '/devices', '/v2/deployables'):
        response = keystone_api.get(path, headers=ADMIN, expect_errors=True)
        assert response.status_int == 401
        assert fault(response)['faultcode'] == 'Client'
        assert 'WWW-Authenticate' in response.headers


def test_public_routes_drop_identity_headers():
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        start_response('200 OK', [])
        return [b'']

    def protected(environ, start_response):
        raise AssertionError('public route went through auth')

    routes = api_app._PublicRoutes(app, protected)
    webtest.TestApp(routes).get('/v2', headers=ADMIN)
    assert 'HTTP_X_ROLES' not in seen
    assert 'HTTP_X_PROJECT_ID' not in seen


def test_wsgi_module(tmp_path):
    # NOTE(tests): importing the module parses configuration and starts
    # RPC, so it runs in its own process.
    config = tmp_path / 'cyborg.conf'
    config.write_text(textwrap.dedent('''\
        [DEFAULT]
        transport_url = fake:/
        [api]
        auth_strategy = noauth
        public_endpoint = https://cloud.example/accelerator
        '''))
    script = textwrap.dedent('''\
        import webtest
        from cyborg.wsgi import api
        body = webtest.TestApp(api.application).get('/').json
        print(body['default_version']['links'][0]['href'])
        ''')
    env = dict(os.environ, CYBORG_CONFIG_FILE=str(config))
    result = subprocess.run([sys.executable, '-W', 'ignore', '-c', script],
                            env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        'https://cloud.example/accelerator/v2')


def test_access_log_line_per_request(api, caplog):
    with caplog.at_level(logging.DEBUG, logger='cyborg.api.access_log'):
        api.get('/v2/devices', headers=dict(ADMIN, **{
            'OpenStack-API-Version': 'accelerator 2.0'}))
        api.get('/v2/nothing?x=1', headers=ADMIN, status=404)
        api.get('/healthcheck')
    lines = [(r.levelname, r.getMessage()) for r in caplog.records
             if r.name == 'cyborg.api.access_log']
    assert len(lines) == 3, lines
    assert lines[0][0] == 'INFO'
    assert re.match(r'\S+ "GET /v2/devices" status: 200 len: \d+ '
                    r'microversion: 2\.0 time: \d+\.\d{6} req-', lines[0][1])
    assert re.match(r'\S+ "GET /v2/nothing\?x=1" status: 404 ',
                    lines[1][1]), lines[1]
    # Load balancers' checks stay out of the INFO log.
    assert lines[2][0] == 'DEBUG'
