"""Sphinx configuration of Cyborg's API reference (api-ref/source).

Built with ``tox -e api-ref``. The JSON samples under ``samples/`` are
written by ``cyborg/tests/functional/test_api_samples.py`` from a running
Cyborg, which also fails when they drift from what the API answers.
"""

# -- General -----------------------------------------------------------------

extensions = [
    # ``rest_method``, ``rest_parameters`` and ``rest_status_code``.
    'os_api_ref',
    'openstackdocstheme',
]

project = 'Cyborg'
copyright = 'The Cyborg authors'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = ['build']
pygments_style = 'native'

# -- openstackdocstheme ------------------------------------------------------

# NOTE(api-ref): this project is not hosted on opendev, so no repository,
# bug tracker or "edit this page" links are configured (as in doc/source).
openstackdocs_auto_name = False
openstackdocs_pdf_link = False

# -- HTML --------------------------------------------------------------------

html_theme = 'openstackdocs'
html_title = 'Accelerator API reference'
html_theme_options = {
    'display_badge': False,
    # NOTE(api-ref): os-api-ref's own sidebar lists the operations.
    'sidebar_mode': 'toc',
}
