"""``accelerator conductor list``: its request, its table, its refusals."""

import json

from osc_lib import exceptions
import pytest

from cyborg.tests.unit.cli.fakes import NO_BODY
from cyborg.tests.unit.cli.fakes import ROOT
from cyborg.tests.unit.cli.fakes import response
from cyborg.tests.unit.cli.fakes import run
from cyborg_cli import errors
from cyborg_cli.v1 import conductors

CONDUCTORS = {'OpenStack-API-Version': 'accelerator 2.11'}
UP = {'host': 'ctl-1', 'status': 'up',
      'last_heartbeat': '2026-11-27T10:00:00+00:00', 'version': '18.0.0',
      'rpc_version': '1.14', 'clock_skew': 0.004}
# NOTE(tests): a conductor whose clock runs two minutes ahead, down since,
# and one that has not measured its skew yet.
DOWN = {'host': 'ctl-2', 'status': 'down',
        'last_heartbeat': '2026-11-27T09:40:00+00:00', 'version': '17.0.0',
        'rpc_version': '1.13', 'clock_skew': 121.5}
UNMEASURED = dict(UP, host='ctl-3', clock_skew=None)


def fault(status, text, headers=None):
    """The error envelope of cyborg/api/errors.py."""
    inner = json.dumps({'faultcode': 'Client' if status < 500 else 'Server',
                        'faultstring': text, 'debuginfo': None})
    return response(status, {'error_message': inner}, headers=headers)


def test_conductor_list_asks_for_2_11_and_shows_every_column():
    (headings, rows), calls = run(
        conductors.ListConductors, [],
        response(200, {'conductors': [UP, DOWN, UNMEASURED]}))
    assert [(c.method, c.url, c.body) for c in calls] == [
        ('GET', ROOT + '/v2/conductors', NO_BODY)]
    assert calls[0].headers.items() >= CONDUCTORS.items()
    assert headings == ('Host', 'Status', 'Last Heartbeat', 'Version',
                        'RPC Version', 'Clock Skew (s)')
    assert list(rows) == [
        ('ctl-1', 'up', '2026-11-27T10:00:00+00:00', '18.0.0', '1.14',
         0.004),
        ('ctl-2', 'down', '2026-11-27T09:40:00+00:00', '17.0.0', '1.13',
         121.5),
        ('ctl-3', 'up', '2026-11-27T10:00:00+00:00', '18.0.0', '1.14',
         None)]


def test_conductor_list_of_a_cloud_without_conductors():
    (_headings, rows), _calls = run(conductors.ListConductors, [],
                                    response(200, {'conductors': []}))
    assert list(rows) == []


def test_conductor_list_takes_no_arguments():
    with pytest.raises(SystemExit):
        run(conductors.ListConductors, ['ctl-1'])


def test_conductor_list_of_a_server_before_2_11_names_the_version():
    older = fault(406, 'Version 2.11 is not supported by the API. Minimum '
                       'is 2.0 and maximum is 2.10.',
                  headers={'OpenStack-API-Maximum-Version': '2.10',
                           'x-openstack-request-id': 'req-1'})
    with pytest.raises(errors.ApiError) as caught:
        run(conductors.ListConductors, [], older)
    message = str(caught.value)
    assert message.startswith(
        'GET /v2/conductors needs accelerator API microversion 2.11, '
        'which this server does not support (it speaks up to 2.10)')
    # NOTE(tests): the API's own words stay, for whoever reads a proxy's.
    assert message.endswith('maximum is 2.10.')
    assert (caught.value.status, caught.value.request_id,
            caught.value.max_version) == (406, 'req-1', '2.10')
    # osc-lib's shell prints a CommandError's text and exits 1.
    assert isinstance(caught.value, exceptions.CommandError)


def test_conductor_list_406_without_a_maximum_header():
    with pytest.raises(errors.ApiError) as caught:
        run(conductors.ListConductors, [],
            response(406, 'Not Acceptable'))
    assert str(caught.value) == (
        'GET /v2/conductors needs accelerator API microversion 2.11, which '
        'this server does not support; upgrade Cyborg to use this command. '
        'The API said: Not Acceptable')


@pytest.mark.parametrize('status, text', [
    (403, 'Policy doesn\'t allow cyborg:conductor:get_all to be performed.'),
    (404, 'GET /v2/conductors exists from microversion 2.11'),
    (503, 'The database is unavailable'),
])
def test_conductor_list_shows_other_refusals_as_the_api_said(status, text):
    with pytest.raises(errors.ApiError) as caught:
        run(conductors.ListConductors, [], fault(status, text))
    assert (caught.value.status, str(caught.value)) == (status, text)


def test_conductor_list_needs_the_conductors_key():
    with pytest.raises(exceptions.CommandError, match='"conductors" list'):
        run(conductors.ListConductors, [], response(200, {'agents': []}))
