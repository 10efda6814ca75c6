"""The query namespace the conductor hands to objects, and engine checks.

Objects call ``dbapi.<resource>.<verb>(context, ...)``; resources with only
create/read/update/delete share ``query.Resource``, the others have a module.
"""

from oslo_config import cfg
import sqlalchemy as sa

from cyborg import exception
from cyborg.db import device_health  # noqa: F401 (part of the namespace)
from cyborg.db import models
from cyborg.db import query
from cyborg.db import services  # noqa: F401 (part of the namespace)

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


def check_connection(url=None):
    """Open one connection so that a bad [database] connection stops the
    process at start with one line that names the option."""
    # NOTE(db): a throwaway engine, because enginefacade's own retries
    # (max_retries x retry_interval) would hide the error for minutes.
    url = url or cfg.CONF.database.connection
    try:
        engine = sa.create_engine(url)
        try:
            engine.connect().close()
        finally:
            engine.dispose()
    except Exception as exc:  # noqa: BLE001 - each driver raises its own
        raise exception.ConfigError(
            option='[database] connection',
            reason='cannot connect to the database: %s' % _first_line(exc)
        ) from exc


def _first_line(exc):
    inner = getattr(exc, 'inner_exception', None) or exc.__cause__ or exc
    text = str(inner).strip()
    return text.splitlines()[0] if text else type(inner).__name__
