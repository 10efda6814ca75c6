"""Cyborg's one exception hierarchy; HTTP codes are assigned in api/errors.py.

Every exception carries a message template filled from keyword arguments, so
what a user reads is written here once and never built by string pasting at
the raise site.
"""


class CyborgException(Exception):
    """Base of every error Cyborg raises on purpose.

    ``code`` names the error for programs, as the message does for people;
    from API microversion 2.12 error bodies carry it. Each class a client
    can meet states its own in its ``class`` line
    (``code='cyborg.<area>.<what>'``), listed in api-ref/source/errors.rst;
    a code is a contract with clients, so it never changes once released.
    Errors answered 500 keep ``cyborg.undefined_code``, as a 500 hides its
    cause.
    """

    msg_fmt = 'An unknown error occurred.'
    code = 'cyborg.undefined_code'

    def __init_subclass__(cls, code=None, **kwargs):
        # NOTE(errors): a subclass that states no code keeps its parent's:
        # oslo.messaging rebuilds a relayed exception as such a subclass.
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                # NOTE(errors): a wrong template must not hide the real error.
                message = self.msg_fmt
        self.message = str(message)
        super().__init__(self.message)

    def __str__(self):
        return self.message


def message_of(exc):
    """What ``exc`` says, without the remote traceback oslo.messaging adds
    to the text of an exception raised in another process."""
    if isinstance(exc, CyborgException):
        return exc.message
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- The families the API maps to HTTP status codes. -------------------------

class Invalid(CyborgException, code='cyborg.invalid'):
    msg_fmt = 'Invalid input: %(reason)s'


class NotFound(CyborgException, code='cyborg.not_found'):
    msg_fmt = 'Resource could not be found.'


class Conflict(CyborgException, code='cyborg.conflict'):
    msg_fmt = 'Conflict: %(reason)s'


class Forbidden(CyborgException, code='cyborg.forbidden'):
    msg_fmt = 'Access was denied to this resource.'


class NotAuthorized(CyborgException, code='cyborg.authentication.required'):
    msg_fmt = 'Not authorized.'


class NotAcceptable(CyborgException, code='cyborg.not_acceptable'):
    msg_fmt = 'Request not acceptable: %(reason)s'


class ServiceUnavailable(CyborgException, code='cyborg.service_unavailable'):
    msg_fmt = 'Service unavailable: %(reason)s'


class UnsupportedMediaType(CyborgException,
                           code='cyborg.media_type.unsupported'):
    msg_fmt = ('A body of type %(media_type)s cannot be read here: send JSON '
               'with Content-Type: application/json.')


class Locked(CyborgException, code='cyborg.locked'):
    msg_fmt = 'The resource is busy: %(reason)s'


class MethodNotAllowed(CyborgException, code='cyborg.method.not_allowed'):
    msg_fmt = 'The method is not allowed for this resource.'


class BodyTooLarge(CyborgException, code='cyborg.body.too_large'):
    msg_fmt = 'The request body is too large.'


# --- Specific errors. --------------------------------------------------------

class RouteNotFound(NotFound, code='cyborg.route.not_found'):
    msg_fmt = 'The resource could not be found.'


class ContentNotAcceptable(NotAcceptable,
                           code='cyborg.media_type.not_acceptable'):
    msg_fmt = ('The requested content type is not available; this API '
               'speaks application/json only.')


class InvalidBody(Invalid, code='cyborg.body.invalid'):
    """The body does not match the route's JSON schema."""


class MalformedBody(Invalid, code='cyborg.body.malformed'):
    """The body is not JSON, or nests too deep to be read."""


class UnstorableText(Invalid, code='cyborg.text.unstorable'):
    """A string holds a NUL or a lone surrogate, which the database
    cannot store."""


class InvalidMicroversion(NotAcceptable,
                          code='cyborg.microversion.unsupported'):
    msg_fmt = ('Version %(version)s is not supported by the API. Minimum is '
               '%(min_version)s and maximum is %(max_version)s.')


class MalformedMicroversion(NotAcceptable,
                            code='cyborg.microversion.malformed'):
    msg_fmt = 'Invalid OpenStack-API-Version header %(value)r: %(reason)s'


class NotInMicroversion(NotFound, code='cyborg.microversion.route_too_new'):
    msg_fmt = ('%(route)s exists from microversion %(since)s; send '
               '"%(header)s: %(service)s %(since)s" or later.')


class NotInMicroversionRange(NotFound,
                             code='cyborg.microversion.route_out_of_range'):
    msg_fmt = ('%(route)s exists in microversions %(since)s to %(until)s '
               'only.')


class NotAcceptableInMicroversion(NotAcceptable,
                                  code='cyborg.microversion.too_low'):
    msg_fmt = ('%(what)s needs microversion %(since)s or later; this '
               'request asked for %(version)s.')


class InvalidUUID(Invalid, code='cyborg.uuid.invalid'):
    msg_fmt = 'Expected a UUID but received %(uuid)s.'


class InvalidParameterValue(Invalid, code='cyborg.parameter.invalid'):
    msg_fmt = '%(err)s'


class UnknownQueryParameter(Invalid, code='cyborg.query.unknown_parameter'):
    msg_fmt = ('Unknown query parameter(s): %(names)s. Supported: '
               '%(supported)s.')


class InvalidLegacyFilter(Invalid, code='cyborg.query.invalid_filter'):
    msg_fmt = 'Invalid filters.field/filters.value pair: %(reason)s'


class PolicyNotAuthorized(Forbidden, code='cyborg.policy.not_allowed'):
    msg_fmt = 'Policy does not allow %(action)s to be performed.'


class DeviceNotFound(NotFound, code='cyborg.device.not_found'):
    msg_fmt = 'Device %(uuid)s could not be found.'


class DeployableNotFound(NotFound, code='cyborg.deployable.not_found'):
    msg_fmt = 'Deployable %(uuid)s could not be found.'


class AttributeNotFound(NotFound, code='cyborg.attribute.not_found'):
    msg_fmt = 'Attribute %(uuid)s could not be found.'


class ControlpathIDNotFound(NotFound, code='cyborg.control_path.not_found'):
    msg_fmt = 'Control path id %(uuid)s could not be found.'


class AttachHandleNotFound(NotFound, code='cyborg.attach_handle.not_found'):
    msg_fmt = 'Attach handle %(uuid)s could not be found.'


class DeviceProfileNotFound(NotFound, code='cyborg.device_profile.not_found'):
    msg_fmt = 'Device profile %(uuid)s could not be found.'


class ARQNotFound(NotFound, code='cyborg.arq.not_found'):
    msg_fmt = 'Accelerator request %(uuid)s could not be found.'


class ImageNotFound(Invalid, code='cyborg.image.not_found'):
    msg_fmt = 'Glance has no image %(image)s.'


class ImageNotUsable(Invalid, code='cyborg.image.not_usable'):
    msg_fmt = 'Image %(image)s cannot be loaded: %(reason)s'


class AmbiguousImage(Invalid, code='cyborg.image.ambiguous'):
    msg_fmt = ('%(count)d active images have %(prop)s=%(value)s; exactly one '
               'must.')


class ImageSignatureInvalid(ImageNotUsable,
                            code='cyborg.image.signature_invalid'):
    msg_fmt = ('Image %(image)s is refused by signature verification: '
               '%(reason)s.')


class ImageUnavailable(ServiceUnavailable, code='cyborg.image.unavailable'):
    msg_fmt = 'Cannot get image %(image)s from Glance: %(reason)s'


class ServiceNotFound(NotFound, code='cyborg.service.not_found'):
    msg_fmt = 'Service %(binary)s on host %(host)s could not be found.'


class DuplicateEntry(Conflict, code='cyborg.duplicate'):
    msg_fmt = 'A %(resource)s with %(columns)s %(value)s already exists.'


class DriverManagedAttribute(Conflict, code='cyborg.attribute.driver_managed'):
    msg_fmt = ('Attribute key %(key)s belongs to the driver, which sets it '
               'from the hardware at every report.')


class DeployableInUse(Conflict, code='cyborg.deployable.in_use'):
    msg_fmt = ('Deployable %(uuid)s has %(count)d attach handles bound to '
               'instances; it cannot be programmed now.')


class ProgrammingFailed(Conflict, code='cyborg.deployable.programming_failed'):
    msg_fmt = ('Programming deployable %(uuid)s with image %(image)s '
               'failed: %(reason)s')


class ARQBadState(Conflict, code='cyborg.arq.bad_state'):
    msg_fmt = ('Accelerator request %(uuid)s is %(state)s; it cannot go to '
               '%(target)s.')


class ARQsUnresolved(Locked, code='cyborg.arq.unresolved'):
    msg_fmt = ('Accelerator requests of instance %(instance)s are still '
               'being bound: %(uuids)s')


class ServiceTokenRequired(Forbidden, code='cyborg.service_token.required'):
    # NOTE(exception): "requires a service token" is upstream's wording,
    # which tempest matches.
    msg_fmt = ('%(action)s requires a service token (Nova sends one with '
               'the user\'s token; see the cyborg:arq:service_token policy '
               'rule).')


class QuotaExceeded(Forbidden, code='cyborg.quota.exceeded'):
    """A request would take a project over a limit; ``over`` lists each
    limit gone over as ``{resource, limit, usage, requested}``."""

    msg_fmt = 'Quota exceeded: %(details)s.'

    def __init__(self, message=None, project_id=None, over=(), **kwargs):
        over = [dict(item) for item in over]
        # NOTE(exception): rebuilt from RPC, the kwargs hold details too.
        kwargs.pop('details', None)
        details = '; '.join(
            '%(resource)s has a limit of %(limit)d; project %(project)s uses '
            '%(usage)d and asks for %(requested)d more' % dict(
                item, project=project_id) for item in over)
        super().__init__(message, details=details, project_id=project_id,
                         over=over, **kwargs)


class QuotaUnavailable(ServiceUnavailable, code='cyborg.quota.unavailable'):
    msg_fmt = 'The limits could not be read from Keystone: %(reason)s'


class BoundARQNeedsServiceToken(Forbidden, code='cyborg.arq.bound'):
    msg_fmt = ('Accelerator request %(uuid)s is %(state)s; deleting it '
               'requires a service token.')


class ResourceInUse(Conflict, code='cyborg.resource.in_use'):
    msg_fmt = 'The %(resource)s %(uuid)s is still referenced.'


class DeviceProfileInUse(Conflict, code='cyborg.device_profile.in_use'):
    msg_fmt = ('Device profile %(name)s is used by accelerator requests; '
               'delete them first.')


class DuplicateDeviceProfile(Conflict,
                             code='cyborg.device_profile.duplicate_name'):
    msg_fmt = 'A device profile named %(name)s already exists.'


class DuplicateDeviceProfileUUID(Conflict,
                                 code='cyborg.device_profile.duplicate_uuid'):
    msg_fmt = 'A device profile with uuid %(uuid)s already exists.'


class GenerationConflict(Conflict, code='cyborg.report.generation_conflict'):
    msg_fmt = ('The inventory of host %(host)s is no longer at generation '
               '%(generation)s; send it whole.')


class StaleReport(Conflict, code='cyborg.report.stale'):
    msg_fmt = ('The report of host %(host)s carries generation '
               '%(generation)s, older than the %(current)s recorded; it was '
               'ignored.')


class InvalidReport(Invalid, code='cyborg.report.invalid'):
    msg_fmt = 'The report of host %(host)s was ignored: %(reason)s.'


class DeviceModeNotOffered(Invalid, code='cyborg.device.mode_not_offered'):
    msg_fmt = ('Device %(uuid)s does not offer the mode %(mode)s; it offers '
               '%(modes)s.')


class DeviceModeInUse(Conflict, code='cyborg.device.mode_in_use'):
    msg_fmt = ('Device %(uuid)s cannot change its mode while accelerator '
               'requests are bound to it: %(arqs)s.')


class DeviceHoldsVgpus(Conflict, code='cyborg.device.holds_vgpus'):
    msg_fmt = ('Device %(uuid)s still holds the mediated devices %(mdevs)s; '
               'it cannot change its mode until they are removed.')


class DeviceModeSwitchFailed(Conflict,
                             code='cyborg.device.mode_switch_failed'):
    msg_fmt = ('Device %(uuid)s could not change to the mode %(mode)s: '
               '%(reason)s')


class DeviceStateConflict(Conflict, code='cyborg.device.bad_state'):
    msg_fmt = ('Device %(uuid)s is %(status)s; it must be %(expected)s to '
               '%(action)s it.')


class DeviceMetricsUnavailable(Conflict, code='cyborg.device.no_metrics'):
    msg_fmt = 'Device %(uuid)s has no telemetry now: %(reason)s'


class AgentUnavailable(ServiceUnavailable, code='cyborg.agent.unavailable'):
    msg_fmt = 'The agent of host %(host)s did not answer: %(reason)s'


class AcceleratorNotFound(NotFound, code='cyborg.accelerator.not_found'):
    msg_fmt = 'Accelerator %(uuid)s could not be found.'


class AgentNotFound(NotFound, code='cyborg.agent.not_found'):
    msg_fmt = 'No cyborg-agent has reported from host %(host)s.'


class DriverNotAvailable(NotFound, code='cyborg.driver.not_installed'):
    msg_fmt = ('Driver %(name)s is not installed on host %(host)s; '
               'installed drivers are: %(available)s')


class DriverNotEnabled(NotFound, code='cyborg.driver.not_enabled'):
    msg_fmt = 'Driver %(name)s is not enabled on host %(host)s.'


class DriverAlreadyEnabled(Conflict, code='cyborg.driver.already_enabled'):
    msg_fmt = 'Driver %(name)s is already enabled on host %(host)s.'


class DriverInstallFailed(Conflict, code='cyborg.driver.install_failed'):
    msg_fmt = ('Installing driver %(name)s on host %(host)s failed; the host '
               'is as it was: %(reason)s')


class DriverUpdateFailed(Conflict, code='cyborg.driver.update_failed'):
    msg_fmt = ('Updating driver %(name)s on host %(host)s failed; it keeps '
               'its previous options: %(reason)s')


class DriverInUse(Conflict, code='cyborg.driver.in_use'):
    msg_fmt = ('Driver %(name)s on host %(host)s has devices bound to '
               'instances or attached (%(what)s); detach them first.')


class DuplicateAccelerator(Conflict, code='cyborg.accelerator.duplicate'):
    msg_fmt = 'An accelerator with %(field)s %(value)s already exists.'


class AcceleratorChanged(Conflict, code='cyborg.accelerator.changed'):
    msg_fmt = ('Accelerator %(uuid)s was changed by another request (now at '
               'revision %(revision)s); read it again and retry.')


class AcceleratorSpecManaged(Conflict, code='cyborg.accelerator.spec_managed'):
    msg_fmt = ('%(key)s of accelerator %(uuid)s comes from the hardware its '
               'driver discovered; only acc_capability can be set.')


class AcceleratorAttached(Conflict, code='cyborg.accelerator.attached'):
    msg_fmt = 'Accelerator %(uuid)s is already attached to %(target)s.'


class AcceleratorAttachedElsewhere(
        AcceleratorAttached, code='cyborg.accelerator.attached_elsewhere'):
    # NOTE(exception): said instead of AcceleratorAttached where the holder
    # is another project's instance, which the caller may not learn of.
    msg_fmt = ('Accelerator %(uuid)s is already attached: it is in use by '
               'another project.')


class InstanceNotInProject(Invalid, code='cyborg.instance.not_in_project'):
    # NOTE(exception): the same words whether Nova has no such instance or
    # another project owns it, so that no caller learns which.
    msg_fmt = ('Instance %(instance)s was not found in project %(project)s; '
               'an accelerator can only be attached to an instance of the '
               'caller\'s project.')


class AcceleratorNotAttached(Conflict, code='cyborg.accelerator.not_attached'):
    msg_fmt = 'Accelerator %(uuid)s is not attached.'


class AcceleratorBusy(Conflict, code='cyborg.accelerator.busy'):
    msg_fmt = ('Accelerator %(uuid)s is being %(action)s by another '
               'request; retry when it is done.')


class AcceleratorAllocated(Conflict, code='cyborg.accelerator.allocated'):
    msg_fmt = ('Placement holds allocations on accelerator %(uuid)s '
               '(consumers %(consumers)s); release them through Nova first.')


class AcceleratorAllocatedElsewhere(
        AcceleratorAllocated, code='cyborg.accelerator.allocated_elsewhere'):
    # NOTE(exception): the consumers are instances; another project's are
    # not named.
    msg_fmt = ('Placement holds allocations on accelerator %(uuid)s: it is '
               'in use by another project.')


class AttachFailed(Conflict, code='cyborg.accelerator.attach_failed'):
    msg_fmt = 'Attaching accelerator %(uuid)s failed: %(reason)s'


class DetachFailed(Conflict, code='cyborg.accelerator.detach_failed'):
    msg_fmt = 'Detaching accelerator %(uuid)s failed: %(reason)s'


class RPCVersionCapped(Conflict, code='cyborg.rpc.version_capped'):
    """[upgrade_levels] pins a peer below the version an action needs."""

    msg_fmt = ('%(action)s needs %(service)s RPC API %(needed)s, but '
               '[upgrade_levels] %(service)s pins it at %(cap)s while older '
               '%(service)s services run; it is available once every '
               '%(service)s is upgraded and the pin removed.')


class ObjectActionError(CyborgException):
    msg_fmt = 'Object action %(action)s failed because: %(reason)s'


class DatabaseUnavailable(ServiceUnavailable,
                          code='cyborg.database.unavailable'):
    """The conductor could not reach its database."""

    msg_fmt = 'The database is unavailable: %(reason)s'


class ConductorUnavailable(ServiceUnavailable,
                           code='cyborg.conductor.unavailable'):
    """No conductor answered an RPC call, or the broker is unreachable."""


class DeadlineExceeded(ServiceUnavailable, code='cyborg.deadline.exceeded'):
    """A call's caller stopped waiting before its work was done; nothing
    of it was written. A caller only sees it when the clocks disagree."""

    msg_fmt = ('%(action)s was dropped: its caller stopped waiting for it '
               '%(late)s seconds ago. Nothing of it was done; retry it.')


class DeviceClaimed(Conflict, code='cyborg.device.claimed'):
    """Another workflow runs host-side work on the device (a claim in the
    database, cyborg.db.claims); nothing was done."""

    msg_fmt = ('Device %(uuid)s is busy: conductor %(conductor)s is running '
               '%(workflow)s on it. Retry once it is done.')


# --- Start-up and configuration errors (never reach an API response). -------

class ConfigError(CyborgException):
    """A configuration value stops the process; the message names the option.
    """

    msg_fmt = '%(option)s: %(reason)s'


class DriverNotFound(ConfigError):
    msg_fmt = ('[agent] enabled_drivers: unknown driver %(name)r; installed '
               'drivers are: %(available)s')


class DriverError(CyborgException):
    msg_fmt = 'Driver %(driver)s failed: %(reason)s'


class DriverOperationNotSupported(Invalid, code='cyborg.driver.not_supported'):
    msg_fmt = 'Driver %(driver)s does not support %(operation)s.'


# --- Nova (raised by cyborg.clients.nova). ----------------------------------

class NovaUnavailable(ServiceUnavailable, code='cyborg.nova.unavailable'):
    msg_fmt = ('Nova is unavailable, so the instance could not be checked: '
               '%(reason)s')


# --- Placement (raised by cyborg.clients.placement). -------------------------

class PlacementUnavailable(ServiceUnavailable,
                           code='cyborg.placement.unavailable'):
    msg_fmt = 'Placement is unavailable: %(reason)s'


class PlacementError(CyborgException):
    msg_fmt = ('Placement refused %(method)s %(url)s: HTTP %(status)s '
               '%(detail)s')


class PlacementGenerationConflict(Conflict,
                                  code='cyborg.placement.generation_conflict'):
    msg_fmt = ('Resource provider %(uuid)s changed in Placement while it was '
               'being written.')


class PlacementInventoryInUse(Conflict,
                              code='cyborg.placement.inventory_in_use'):
    msg_fmt = ('Placement keeps inventory of resource provider %(uuid)s that '
               'is allocated: %(detail)s')


class ResourceProviderNotFound(NotFound,
                               code='cyborg.placement.provider_not_found'):
    msg_fmt = ('Placement has no resource provider named %(name)s; the '
               'compute service of this host creates it, or set [agent] '
               'resource_provider_name to the name it uses.')


class ResourceProviderNameTaken(Conflict,
                                code='cyborg.placement.provider_name_taken'):
    msg_fmt = ('Placement already has a resource provider named %(name)s '
               'with uuid %(existing)s, not %(uuid)s; Cyborg leaves it alone.')
