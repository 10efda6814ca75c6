"""Lists page from microversion 2.4: limit, marker, sort_key, sort_dir, next.
"""

import urllib.parse

import pytest

from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import fault

V24 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.4'})
V23 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.3'})


def _walk(api, url, key):
    """Follow next links; returns the pages' items."""
    pages = []
    while url:
        body = api.get(url, headers=V24).json
        pages.append(body[key])
        url = body.get('next')
        if url:
            parts = urllib.parse.urlsplit(url)
            url = '%s?%s' % (parts.path, parts.query)
    return pages


@pytest.fixture
def devices(make_device):
    return [make_device(hostname='host%02d' % i) for i in range(5)]


def test_pages_follow_next_links_to_the_end(api, devices):
    pages = _walk(api, '/v2/devices?limit=2', 'devices')
    assert [len(page) for page in pages] == [2, 2, 1]
    seen = [d['uuid'] for page in pages for d in page]
    assert seen == [d.uuid for d in devices]


def test_sort_key_and_dir(api, devices):
    body = api.get('/v2/devices?sort_key=hostname&sort_dir=desc&limit=10',
                   headers=V24).json
    assert [d['hostname'] for d in body['devices']] == [
        'host04', 'host03', 'host02', 'host01', 'host00']
    assert 'next' not in body


def test_filters_are_kept_in_next_links(api, devices):
    body = api.get('/v2/devices?hostname=host01&limit=1', headers=V24).json
    assert [d['hostname'] for d in body['devices']] == ['host01']
    assert 'hostname=host01' in body['next']


def test_max_limit_caps_a_page(api, devices, override):
    override('max_limit', 3, group='api')
    body = api.get('/v2/devices?limit=100', headers=V24).json
    assert len(body['devices']) == 3 and 'next' in body


@pytest.mark.parametrize('query, words', [
    ('limit=0', 'positive integer'),
    ('limit=x', 'positive integer'),
    ('marker=nope', 'marker must be'),
    ('sort_key=secret', 'sort_key must be one of'),
    ('sort_dir=up', 'sort_dir must be'),
])
def test_bad_paging_is_400(api, devices, query, words):
    resp = api.get('/v2/devices?' + query, headers=V24, status=400)
    assert words in fault(resp)['faultstring']


def test_unknown_marker_is_400(api, devices):
    api.get('/v2/devices?marker=%s' % ('0' * 8 + '-0000-0000-0000-' +
                                       '0' * 12), headers=V24, status=400)


def test_before_2_4_lists_do_not_page(api, devices):
    body = api.get('/v2/devices', headers=V23).json
    assert list(body) == ['devices'] and len(body['devices']) == 5
    api.get('/v2/devices?limit=2', headers=V23, status=400)


def test_deployables_and_profiles_page_too(api, make_deployable):
    for i in range(3):
        make_deployable(name='host_%d' % i)
        api.post_json('/v2/device_profiles', [
            {'name': 'dp%d' % i, 'groups': [{'resources:FPGA': '1'}]}],
            headers=ADMIN)
    assert [len(p) for p in _walk(api, '/v2/deployables?limit=2',
                                  'deployables')] == [2, 1]
    pages = _walk(api, '/v2/device_profiles?limit=1&sort_key=name'
                       '&sort_dir=desc', 'device_profiles')
    assert [p[0]['name'] for p in pages if p] == ['dp2', 'dp1', 'dp0']
