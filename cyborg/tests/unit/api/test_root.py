"""Version discovery: ``GET /`` and ``GET /v2``, links, routing into v2."""

from cyborg.api.controllers import root
from cyborg.tests.unit.api.conftest import ADMIN

V2 = {'id': 'v2', 'status': 'CURRENT', 'min_version': '2.0',
      'max_version': '2.12',
      'links': [{'href': 'http://localhost/v2', 'rel': 'self'}]}


def test_root_document(api):
    response = api.get('/')
    assert response.status_int == 200
    assert response.content_type == 'application/json'
    assert response.json == {'name': 'OpenStack Cyborg API',
                             'description': root.DESCRIPTION,
                             'versions': [V2],
                             'default_version': V2}


def test_root_has_no_version_headers(api):
    response = api.get('/')
    assert 'OpenStack-API-Version' not in response.headers


def test_v2_document(api):
    expected = {'id': 'v2.0', 'status': 'CURRENT', 'min_version': '2.0',
                'max_version': '2.12',
                'links': [{'href': 'http://localhost/v2/', 'rel': 'self'}]}
    assert api.get('/v2').json == expected
    assert api.get('/v2/').json == expected


def test_public_routes_need_no_identity(api):
    assert api.get('/').status_int == 200
    assert api.get('/v2').status_int == 200


def test_links_use_public_endpoint(api, override):
    override('public_endpoint', 'https://cloud.example/accel/', group='api')
    body = api.get('/').json
    assert body['versions'][0]['links'] == [
        {'href': 'https://cloud.example/accel/v2', 'rel': 'self'}]
    assert api.get('/v2').json['links'] == [
        {'href': 'https://cloud.example/accel/v2/', 'rel': 'self'}]


def test_links_follow_the_mount_point(api):
    # NOTE(tests): under uWSGI the API is mounted (devstack: /accelerator);
    # links must carry the mount point, not a hard-coded one.
    body = api.get('/accelerator/', extra_environ={
        'SCRIPT_NAME': '/accelerator', 'PATH_INFO': '/'}).json
    assert body['versions'][0]['links'][0]['href'] == (
        'http://localhost/accelerator/v2')


def test_path_without_version_goes_to_v2(api, make_device):
    make_device()
    unversioned = api.get('/devices', headers=ADMIN)
    versioned = api.get('/v2/devices', headers=ADMIN)
    assert unversioned.status_int == 200
    assert unversioned.json == versioned.json
    assert len(unversioned.json['devices']) == 1
