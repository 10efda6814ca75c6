"""Policies of the quota limits API."""

from cyborg.policies import base

_PATH = '/v2/limits'

GET = 'cyborg:limit:get'
#: The rule a caller must also pass to read another project's limits.
OTHER_PROJECT = 'cyborg:limit:other_project'


def list_rules():
    return [
        base.rule(GET, base.PROJECT_READER_OR_ADMIN,
                  'Show the caller\'s project\'s quota limits and usage.',
                  [{'method': 'GET', 'path': _PATH}]),
        base.rule(OTHER_PROJECT, base.ADMIN_API,
                  'Show another project\'s quota limits and usage '
                  '(?project_id=).',
                  [{'method': 'GET', 'path': _PATH + '?project_id={id}'}]),
    ]
