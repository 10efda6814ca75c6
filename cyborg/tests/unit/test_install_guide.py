"""The install guide's Nova options are ones Nova reads, with the values
the tests that run the real Nova take from it."""

from keystoneauth1 import loading as ks_loading

from cyborg.tests import install_guide
from cyborg.tests.unit.devstack import conf_check


def _names(opts):
    return {opt.dest for opt in opts}


def test_nova_cyborg_group_holds_only_session_and_adapter_options():
    allowed = set(conf_check.nova_cyborg_allowed_options()['cyborg'])
    cyborg = install_guide.nova_conf()['cyborg']
    assert set(cyborg) <= allowed, set(cyborg) - allowed
    # Nova finds Cyborg in the catalog: no fixed URL in what the tests run.
    assert 'endpoint_override' not in cyborg
    assert cyborg['valid_interfaces'] in install_guide.accelerator_endpoints()


def test_service_user_sends_its_token_with_the_password_plugin():
    service_user = install_guide.nova_conf()['service_user']
    assert service_user['send_service_user_token'] == 'true'
    assert service_user['auth_type'] == 'password'
    known = _names(ks_loading.get_auth_plugin_conf_options('password')) | \
        {'auth_type', 'send_service_user_token'}
    assert set(service_user) <= known, set(service_user) - known
    assert service_user['auth_url'] == install_guide.KEYSTONE_URL
    assert service_user['password'] == install_guide.NOVA_PASSWORD
    # The user the guide gives the role Cyborg's service-token rule takes.
    assert 'service' in install_guide.roles()[service_user['username']]


def test_deployment_values_replace_the_examples():
    conf = install_guide.nova_conf_for('http://127.0.0.1:5000/v3', 'secret',
                                       'RegionTwo')
    assert conf['service_user']['auth_url'] == 'http://127.0.0.1:5000/v3'
    assert conf['service_user']['password'] == 'secret'
    assert conf['cyborg']['region_name'] == 'RegionTwo'


def test_every_accelerator_endpoint_ends_with_the_api_version():
    endpoints = install_guide.accelerator_endpoints()
    assert set(endpoints) == {'public', 'internal', 'admin'}
    assert install_guide.endpoint_path() == '/v2'
