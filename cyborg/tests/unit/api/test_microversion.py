"""Microversion negotiation: header forms, limits, response headers."""

import microversion_parse
import pytest

from cyborg import exception
from cyborg.api import microversion
from cyborg.tests.unit.api.conftest import ADMIN
from cyborg.tests.unit.api.conftest import fault
from cyborg.tests.unit.api.conftest import version_header


@pytest.mark.parametrize('value, expected', [
    (None, (2, 0)),
    ('', (2, 0)),
    ('accelerator 2.3', (2, 3)),
    ('ACCELERATOR 2.1', (2, 1)),
    ('accelerator latest', (2, 12)),
    ('2.2', (2, 2)),
    ('latest', (2, 12)),
    ('compute 2.90', (2, 0)),
    ('compute 2.90, accelerator 2.2', (2, 2)),
])
def test_parse(value, expected):
    headers = {} if value is None else {'OpenStack-API-Version': value}
    assert microversion.parse(headers) == expected


@pytest.mark.parametrize('value, error', [
    ('accelerator 3.0', exception.InvalidMicroversion),
    ('accelerator 2.99', exception.InvalidMicroversion),
    ('accelerator 1.0', exception.InvalidMicroversion),
    ('accelerator foo', exception.MalformedMicroversion),
    ('accelerator 2', exception.MalformedMicroversion),
    ('2.x', exception.MalformedMicroversion),
    ('3.0', exception.InvalidMicroversion),
])
def test_parse_refuses(value, error):
    with pytest.raises(error):
        microversion.parse({'OpenStack-API-Version': value})


def test_versions_list_is_the_single_source():
    versions = [entry.version for entry in microversion.VERSIONS]
    # Upstream's versions stay as they are; ours follow with no gap.
    assert versions[:4] == ['2.0', '2.1', '2.2', '2.3']
    minors = [int(v.split('.')[1]) for v in versions]
    assert minors == list(range(len(versions)))
    assert all(v.startswith('2.') for v in versions)
    assert all(entry.note for entry in microversion.VERSIONS)
    assert microversion.MIN_VERSION == (2, 0)
    assert microversion.MAX_VERSION == (2, len(versions) - 1)


def test_bare_header_logs_a_deprecation(caplog):
    microversion.parse({'OpenStack-API-Version': '2.3'})
    assert 'Deprecated' in caplog.text


@pytest.mark.parametrize('value, echoed', [
    (None, 'accelerator 2.0'),
    ('accelerator 2.3', 'accelerator 2.3'),
    ('2.1', 'accelerator 2.1'),
    ('accelerator latest', 'accelerator 2.12'),
])
def test_response_headers(api, value, echoed):
    headers = dict(ADMIN)
    if value is not None:
        headers.update(version_header(value))
    response = api.get('/v2/devices', headers=headers)
    assert response.headers['OpenStack-API-Version'] == echoed
    assert response.headers['OpenStack-API-Minimum-Version'] == '2.0'
    assert response.headers['OpenStack-API-Maximum-Version'] == '2.12'
    assert response.headers['Vary'] == 'OpenStack-API-Version'


def test_version_headers_on_the_v2_document(api):
    response = api.get('/v2', headers=version_header('accelerator 2.2'))
    assert response.headers['OpenStack-API-Version'] == 'accelerator 2.2'


@pytest.mark.parametrize('value', ['accelerator 3.0', 'accelerator 2.99',
                                   'accelerator foo'])
def test_unacceptable_version_is_406(api, value):
    response = api.get('/v2/devices', expect_errors=True,
                       headers=dict(ADMIN, **version_header(value)))
    assert response.status_int == 406
    assert fault(response)['faultcode'] == 'Client'
    assert response.headers['OpenStack-API-Minimum-Version'] == '2.0'
    assert response.headers['OpenStack-API-Maximum-Version'] == '2.12'
    assert 'OpenStack-API-Version' not in response.headers


def test_root_ignores_the_version_header(api):
    response = api.get('/', headers=version_header('accelerator 9.9'))
    assert response.status_int == 200


def test_no_two_variants_of_a_handler_overlap():
    # importing the root controller defines every handler
    from cyborg.api.controllers import root  # noqa: F401

    found = microversion.variants()
    assert found, 'no versioned handlers'
    for (module, name), ranges in found.items():
        spans = sorted((low, high) for low, high, _func in ranges)
        for (_low, high), (next_low, _high) in zip(spans, spans[1:],
                                                  strict=False):
            assert high < next_low, '%s.%s: %s overlaps' % (module, name,
                                                          spans)
        for low, high, _func in ranges:
            assert microversion.MIN_VERSION <= low <= high <= (
                microversion.MAX_VERSION), '%s.%s' % (module, name)


def test_by_version_picks_the_latest_entry_at_or_below():
    table = microversion.ByVersion({'2.0': 'a', '2.3': 'b', '2.4': 'c'})
    version = microversion_parse.parse_version_string
    assert [table(version(v)) for v in ('2.0', '2.2', '2.3', '2.5')] == [
        'a', 'a', 'b', 'c']
    with pytest.raises(ValueError):
        microversion.ByVersion({'2.1': 'a'})


@pytest.mark.parametrize('path, version', [
    ('/v2/agents', 'accelerator 2.3'),
    ('/v2/drivers', 'accelerator 2.4'),
    ('/v2/services', None),
])
def test_a_later_route_says_from_which_version(api, path, version):
    headers = dict(ADMIN)
    if version:
        headers.update(version_header(version))
    response = api.get(path, headers=headers, expect_errors=True)
    assert response.status_int == 404
    since = '2.4' if path == '/v2/agents' else '2.5'
    assert fault(response)['faultstring'] == (
        'GET %s exists from microversion %s; send "OpenStack-API-Version: '
        'accelerator %s" or later.' % (path, since, since))
    assert response.headers['OpenStack-API-Maximum-Version'] == '2.12'
