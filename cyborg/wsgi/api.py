"""``application`` for uWSGI, mod_wsgi and other WSGI servers.

The configuration file is ``$CYBORG_CONFIG_FILE`` when set, else found in
oslo.config's standard locations (/etc/cyborg/cyborg.conf...).
"""

import os

from cyborg.api import app as api_app

CONFIG_FILE_ENV = 'CYBORG_CONFIG_FILE'


def _config_files():
    path = os.environ.get(CONFIG_FILE_ENV)
    return [path] if path else None


# NOTE(wsgi): importing the cyborg package already selected oslo.service's
# threading backend; there is no eventlet in Cyborg.
application = api_app.init_application(
    argv=[], default_config_files=_config_files())
