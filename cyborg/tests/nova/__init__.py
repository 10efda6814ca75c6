"""Nova from PyPI with Cyborg: its services, Glance and a Neutron stand-in."""
