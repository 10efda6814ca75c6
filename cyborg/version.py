"""Package version, as pbr computes it from git or the installed metadata."""

import pbr.version

version_info = pbr.version.VersionInfo('cyborg')
version_string = version_info.version_string
