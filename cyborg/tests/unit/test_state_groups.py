"""No set of states is written out outside cyborg/states.py."""

import ast
import pathlib

import cyborg

PACKAGE = pathlib.Path(cyborg.__file__).parent
_PREFIXES = ('ARQ_', 'DEVICE_')


def _state_names(node):
    """The ``states.ARQ_*`` and ``states.DEVICE_*`` elements of a literal."""
    return [element.attr for element in node.elts
            if isinstance(element, ast.Attribute) and
            isinstance(element.value, ast.Name) and
            element.value.id == 'states' and
            element.attr.startswith(_PREFIXES)]


def written_out(source, filename='<source>'):
    """``(line, names)`` of each tuple, list or set literal of ``source``
    that names two or more states."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = _state_names(node)
            if len(names) >= 2:
                found.append((node.lineno, names))
    return found


def _modules():
    for path in sorted(PACKAGE.rglob('*.py')):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == 'tests' or relative == pathlib.Path(
                'states.py'):
            continue
        yield relative, path


def test_the_finder_sees_each_kind_of_literal():
    assert written_out(
        'a = (states.ARQ_BOUND, states.ARQ_BIND_FAILED)\n'
        'b = x in [states.DEVICE_READY, states.DEVICE_LOST]\n'
        'c = frozenset({states.ARQ_BOUND, states.DEVICE_ERROR})\n'
        'd = (states.ARQ_BOUND,)\n'
        'e = (states.HEALTH_OK, states.HEALTH_FAILED)\n') == [
        (1, ['ARQ_BOUND', 'ARQ_BIND_FAILED']),
        (2, ['DEVICE_READY', 'DEVICE_LOST']),
        (3, ['ARQ_BOUND', 'DEVICE_ERROR'])]


def test_the_scan_covers_the_modules_that_read_states():
    scanned = {str(relative) for relative, _path in _modules()}
    assert {'db/arqs.py', 'db/ownership.py', 'conductor/explain.py',
            'conductor/lifecycle.py'} <= scanned
    assert 'states.py' not in scanned


def test_state_sets_are_named_groups_of_cyborg_states():
    found = ['%s:%d: %s' % (relative, line, ', '.join(names))
             for relative, path in _modules()
             for line, names in written_out(path.read_text(), str(path))]
    assert found == [], (
        'name these sets of states in cyborg/states.py and use the group:\n'
        + '\n'.join(found))
