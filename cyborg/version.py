"""Package version, as pbr computes it from git or the installed metadata."""

import pbr.version

version_info = pbr.version.VersionInfo('cyborg')
version_string = version_info.version_string


# NOTE(version): the three names a Guru Meditation Report asks its version
# object for; this module is that object.
def vendor_string():
    return 'OpenStack'


def product_string():
    return 'OpenStack Cyborg'


def version_string_with_package():
    return version_info.release_string()
