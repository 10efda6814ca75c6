"""Client side of the conductor RPC API, used by the API and the agents."""

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg import rpc

CONF = cfg.CONF


class ConductorAPI:
    """Calls into the conductors (any one of them answers).

    API version history:

    * 1.0 - Initial version: object indirection, report_data, heartbeat.
    """

    RPC_API_VERSION = '1.0'

    def __init__(self, topic=None):
        target = messaging.Target(topic=topic or CONF.conductor.topic,
                                  version='1.0')
        self.client = rpc.get_client(target, version_cap=self.RPC_API_VERSION)

    # --- Object indirection (remotable methods of cyborg.objects) ----------

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_class_action_versions',
                          objname=objname, objmethod=objmethod,
                          object_versions=object_versions, args=args,
                          kwargs=kwargs)

    def object_action(self, context, objinst, objmethod, args, kwargs):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_action', objinst=objinst,
                          objmethod=objmethod, args=args, kwargs=kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_backport_versions',
                          objinst=objinst, object_versions=object_versions)

    # --- Agents ------------------------------------------------------------

    def report_data(self, context, host, report, timeout=None):
        """Send an agent's discovered inventory; returns what was recorded.

        :param report: ``cyborg.drivers.report.HostReport`` as a primitive.
        """
        cctxt = self.client.prepare(timeout=timeout)
        return cctxt.call(context, 'report_data', host=host, report=report)

    def heartbeat(self, context, host, binary, version):
        """Tell the conductors a service is alive (fire and forget)."""
        cctxt = self.client.prepare()
        cctxt.cast(context, 'heartbeat', host=host, binary=binary,
                   version=version)
