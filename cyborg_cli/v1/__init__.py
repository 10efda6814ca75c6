"""The ``openstack accelerator`` commands of API name ``accelerator_ops``."""
