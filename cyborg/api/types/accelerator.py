"""The /v1 Accelerator resource as the API shows it."""

import wsme.types as wtypes

from cyborg.api.types import base
from cyborg.api.types import link

RESOURCE = 'v1/accelerators'
#: The attachment fields that identify a project's instance.
PROJECT_DETAILS = ('instance_uuid', 'arq_uuid', 'project_id')


class AccSpecs(base.Body):
    """What an accelerator is: remote or local, how many units, of which
    type, and what it can do (free-form)."""

    remote = int
    num = int
    device_type = wtypes.text
    acc_capability = base.JSON

    _wsme_attr_order = ('remote', 'num', 'device_type', 'acc_capability')


class Attachment(wtypes.Base):
    """Who holds an accelerator: an instance (through /v1 or Nova) or a
    host; another project's instance shows only that it is in use."""

    type = wtypes.text
    state = wtypes.text
    via = wtypes.text
    instance_uuid = wtypes.text
    arq_uuid = wtypes.text
    project_id = wtypes.text
    host = wtypes.text

    _wsme_attr_order = ('type', 'state', 'via', 'instance_uuid', 'arq_uuid',
                        'project_id', 'host')


def _attachment(entry, project):
    shown = dict(entry)
    owner = shown.get('project_id')
    if project is not None and owner is not None and owner != project:
        for name in PROJECT_DETAILS:
            shown.pop(name, None)
    return Attachment(**shown)


class Accelerator(wtypes.Base):
    """A discovered deployable, or an operator's record of one."""

    uuid = wtypes.text
    name = wtypes.text
    acc_specs = AccSpecs
    host = wtypes.text
    deployable_uuid = wtypes.text
    device_uuid = wtypes.text
    attachments = [Attachment]
    # NOTE(v1): times as the conductor wrote them (ISO 8601, microseconds,
    # no zone), as the /v1 API has always shown them.
    created_at = wtypes.text
    updated_at = wtypes.text
    links = [link.Link]

    _wsme_attr_order = ('uuid', 'name', 'acc_specs', 'host',
                        'deployable_uuid', 'device_uuid', 'attachments',
                        'created_at', 'updated_at', 'links')

    @classmethod
    def from_entry(cls, entry, project=None):
        """The view of a conductor's accelerator (a dict).

        :param project: the project whose attachments show their instance;
            None: every project's do.
        """
        shown = {name: entry[name] for name in (
            'uuid', 'name', 'host', 'deployable_uuid', 'device_uuid',
            'created_at', 'updated_at')}
        return cls(acc_specs=AccSpecs(**entry['acc_specs']),
                   attachments=[_attachment(item, project)
                                for item in entry['attachments']],
                   links=[link.make_link('self', url(entry['uuid']))],
                   **shown)


def url(uuid):
    return '%s/%s/%s' % (link.public_url(), RESOURCE, uuid)


class AcceleratorCollection(wtypes.Base):
    """``{"accelerator": [...]}`` (the proposal names the list so)."""

    accelerator = [Accelerator]

    @classmethod
    def from_entries(cls, entries, project=None):
        return cls(accelerator=[Accelerator.from_entry(entry, project)
                                for entry in entries])


class AcceleratorPost(base.Body):
    """``POST /v1/accelerators``: an accelerator no agent discovers."""

    name = wtypes.text
    uuid = wtypes.text


class Attach(base.Body):
    """``PUT /v1/accelerators/{uuid}``: to an instance or to a host; the
    proposal's example also names the accelerator itself."""

    instance_uuid = wtypes.text
    host = wtypes.text
    name = wtypes.text
    uuid = wtypes.text


class SpecUpdate(AccSpecs):
    """``PUT /v1/accelerators/{uuid}/{spec}``: the whole spec under
    ``acc_specs``, or the one key the path names."""

    acc_specs = AccSpecs

    _wsme_attr_order = AccSpecs._wsme_attr_order + ('acc_specs',)
