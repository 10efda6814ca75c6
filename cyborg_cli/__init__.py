"""OpenStackClient commands for the Cyborg APIs no other client covers."""
