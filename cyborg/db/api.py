"""The query namespace the conductor hands to objects, and engine checks.

Objects call ``dbapi.<resource>.<verb>(context, ...)``; resources with only
create/read/update/delete share ``query.Resource``, the others have a module.
"""

from oslo_db import exception as db_exc

from cyborg.db import models
from cyborg.db import query
from cyborg.db import services  # noqa: F401 (part of the namespace)
from cyborg.db.session import get_engine
from cyborg import exception

devices = query.Resource(models.Device, exception.DeviceNotFound)
deployables = query.Resource(models.Deployable, exception.DeployableNotFound,
                             eager=(models.Deployable.attributes,))
attributes = query.Resource(models.Attribute, exception.AttributeNotFound)
controlpath_ids = query.Resource(models.ControlpathID,
                                 exception.ControlpathIDNotFound)
attach_handles = query.Resource(models.AttachHandle,
                                exception.AttachHandleNotFound)
device_profiles = query.Resource(models.DeviceProfile,
                                 exception.DeviceProfileNotFound)
accelerator_requests = query.Resource(models.AcceleratorRequest,
                                      exception.ARQNotFound)


def check_connection():
    """Open one connection so that a bad [database] connection stops the
    process at start with one line that names the option."""
    try:
        with get_engine().connect():
            pass
    except (db_exc.DBError, Exception) as exc:  # noqa: B014
        raise exception.ConfigError(
            option='[database] connection',
            reason='cannot connect to the database: %s' % _first_line(exc))


def _first_line(exc):
    inner = getattr(exc, 'inner_exception', None) or exc.__cause__ or exc
    text = str(inner).strip()
    return text.splitlines()[0] if text else type(inner).__name__
