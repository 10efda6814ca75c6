"""The Limits resource: a project's quota limits and what it uses of them."""

import wsme.types as wtypes


class Limit(wtypes.Base):
    """One resource class: its limit (-1: unlimited) and the units the
    project's accelerator requests hold."""

    resource = wtypes.text
    resource_class = wtypes.text
    limit = int
    usage = int

    _wsme_attr_order = ('resource', 'resource_class', 'limit', 'usage')


class Limits(wtypes.Base):
    """``{"project_id": ..., "limits": [...]}``."""

    project_id = wtypes.text
    limits = [Limit]

    _wsme_attr_order = ('project_id', 'limits')

    @classmethod
    def from_dicts(cls, project_id, entries):
        return cls(project_id=project_id,
                   limits=[Limit(**entry) for entry in entries])
