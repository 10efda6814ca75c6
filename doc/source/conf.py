"""Sphinx configuration of Cyborg's documentation (doc/source)."""

import os

# NOTE(docs): importing cyborg first selects oslo.service's threading
# backend, as every Cyborg process does; the sample generators load library
# namespaces that would otherwise pick the eventlet backend first.
import cyborg  # noqa: F401

_HERE = os.path.dirname(os.path.abspath(__file__))
_ETC = os.path.join(_HERE, os.pardir, os.pardir, 'etc', 'cyborg')

# -- General -----------------------------------------------------------------

extensions = [
    'openstackdocstheme',
    # ``.. show-options::`` renders the options of an oslo.config namespace.
    'oslo_config.sphinxext',
    # Writes _static/cyborg.conf.sample on every build.
    'oslo_config.sphinxconfiggen',
    # ``.. show-policy::`` renders the default policies of a namespace.
    'oslo_policy.sphinxext',
    # Writes _static/cyborg.policy.yaml.sample on every build.
    'oslo_policy.sphinxpolicygen',
]

config_generator_config_file = os.path.join(
    _ETC, 'cyborg-config-generator.conf')
sample_config_basename = '_static/cyborg'

policy_generator_config_file = os.path.join(
    _ETC, 'cyborg-policy-generator.conf')
sample_policy_basename = '_static/cyborg'

project = 'Cyborg'
copyright = 'The Cyborg authors'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = ['_build']
pygments_style = 'native'
# Version and release come from the installed package (openstackdocstheme).

# -- openstackdocstheme ------------------------------------------------------

# NOTE(docs): this project is not hosted on opendev, so no repository,
# bug tracker or "edit this page" links are configured.
openstackdocs_auto_name = False
openstackdocs_pdf_link = False

# -- HTML --------------------------------------------------------------------

html_theme = 'openstackdocs'
html_title = 'Cyborg documentation'
html_theme_options = {'display_badge': False}
