"""Sphinx configuration of Cyborg's release notes (releasenotes/source)."""

extensions = [
    'openstackdocstheme',
    # ``.. release-notes::`` renders the notes reno finds in git.
    'reno.sphinxext',
]

project = 'Cyborg Release Notes'
copyright = 'The Cyborg authors'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = ['_build']
pygments_style = 'native'

# Release notes are not versioned documents.
version = ''
release = ''

# NOTE(docs): this project is not hosted on opendev, so no repository or
# bug tracker links are configured.
openstackdocs_auto_name = False
openstackdocs_auto_version = False
openstackdocs_pdf_link = False

html_theme = 'openstackdocs'
html_title = 'Cyborg release notes'
html_theme_options = {'display_badge': False}
