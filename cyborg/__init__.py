"""Cyborg: accelerator management for OpenStack clouds."""

import contextlib
import warnings

# NOTE(threading): futurist probes for eventlet at import time, which makes
# eventlet print a deprecation banner although nothing here uses it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from oslo_service import backend as _backend  # noqa: E402
from oslo_service.backend import exceptions as _backend_exc  # noqa: E402

# NOTE(threading): every Cyborg process runs on native threads. The backend
# must be chosen before oslo.messaging imports oslo_service.service, which
# resolves its components on import; doing it here covers the console
# scripts, the WSGI module and the tests alike. Tools that load other
# libraries first (the config and policy generators) may already have the
# default backend; they run no service, and cyborg.service refuses to start
# one on anything but threads.
with contextlib.suppress(_backend_exc.BackendAlreadySelected):
    _backend.init_backend(_backend.BackendType.THREADING)
