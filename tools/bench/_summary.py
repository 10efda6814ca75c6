"""The bootstorm benchmark's summary table, targets and plot."""

import math
import os

TARGET_CONVERGE_S, TARGET_CONVERGE_HOSTS = 60, 1000
TARGET_SQL = 30
TARGET_STEADY_SQL = 1
TARGET_GET_MS, TARGET_GET_ROWS = 100, 2401
#: Scale-out, judged only for --no-placement runs of that many hosts.
TARGET_SCALE_HOSTS = 10000
TARGET_SCALE_CONVERGE_S = 200
TARGET_SCALE_SQL = 15
TARGET_SCALE_STEADY_SQL = 0.2
TARGET_SCALE_RSS_MIB = 300


def _get_cell(get):
    return '%.0f / %.0f' % (get['p50_ms'], get['p90_ms']) if get else '-'


def _value(item, round_name, key, form='%.1f'):
    value = (item.get(round_name) or {}).get(key)
    return '-' if value is None else form % value


def peak_rss(round_result):
    """The largest conductor's peak RSS (MiB) in a round; None if none."""
    found = (round_result or {}).get('conductor_rss_mib') or {}
    return max(found.values(), default=None)


def _rss_cell(item):
    value = peak_rss(item.get('bootstorm'))
    return '-' if value is None else '%.1f' % value


def summary_table(results, args):
    head = ['Hosts', 'Devices', 'Converge (s)', 'DB-only (s)', 'SQL/host',
            'Placement req/host', 'Steady SQL/host',
            'Steady Placement req/host', 'GET deployables p50 / p90 (ms)',
            'GET devices p50 / p90 (ms)', 'Conductor peak RSS (MiB)']
    rows = [[str(r['hosts']), str(r['devices']),
             _value(r, 'bootstorm', 'converge_s'),
             _value(r, 'bootstorm', 'db_converge_s'),
             _value(r, 'bootstorm', 'sql_per_host'),
             _value(r, 'bootstorm', 'placement_per_host'),
             _value(r, 'steady', 'sql_per_host', '%.2f'),
             _value(r, 'steady', 'placement_per_host', '%.2f'),
             _get_cell(r.get('get_deployables')),
             _get_cell(r.get('get_devices')), _rss_cell(r)]
            for r in results]
    lines = ['.. list-table:: Bootstorm: %d devices per host, %d '
             'conductor(s), %d agents at once' % (
                 args.devices, args.conductors, args.concurrency),
             '   :header-rows: 1', '']
    for row in [head] + rows:
        lines.append('   * - %s' % row[0])
        lines.extend('     - %s' % cell for cell in row[1:])
    return '\n'.join(lines)


def targets(results, args):
    """(target, figures, met) for each; met is None where not measured."""
    found = []
    big = [r for r in results if r['hosts'] >= TARGET_CONVERGE_HOSTS and
           r.get('bootstorm')]
    found.append((
        'converge <= %d s for %s hosts' % (TARGET_CONVERGE_S,
                                           f'{TARGET_CONVERGE_HOSTS:,}'),
        '; '.join('%d hosts: %s s' % (
            r['hosts'], _value(r, 'bootstorm', 'converge_s'))
            for r in big) or 'no run of that many hosts',
        all((r['bootstorm']['converge_s'] or math.inf) <= TARGET_CONVERGE_S
            for r in big) if big else None))
    floors = [r for r in big if r['bootstorm'].get('placement_requests')]
    if floors:
        found.append((
            'Placement\'s floor for %s hosts (its CPU seconds / %d CPUs)' % (
                f'{TARGET_CONVERGE_HOSTS:,}', os.cpu_count()),
            '; '.join('%d hosts: %.0f s' % (
                r['hosts'], placement_floor(r['bootstorm']))
                for r in floors),
            all(placement_floor(r['bootstorm']) <= TARGET_CONVERGE_S
                for r in floors)))
    boot = [r for r in results if r.get('bootstorm')]
    found.append((
        '<= %d SQL statements per host for the bootstorm' % TARGET_SQL,
        '; '.join('%d hosts: %.1f' % (r['hosts'],
                                      r['bootstorm']['sql_per_host'])
                  for r in boot) or 'not measured',
        all(r['bootstorm']['sql_per_host'] <= TARGET_SQL for r in boot)
        if boot else None))
    steady = [r for r in results if r.get('steady')]
    found.append((
        'steady state <= %d SQL statement per host and 0 Placement '
        'requests' % TARGET_STEADY_SQL,
        '; '.join('%d hosts: %.2f SQL, %d requests' % (
            r['hosts'], r['steady']['sql_per_host'],
            r['steady']['placement_requests']) for r in steady)
        or 'not measured',
        all(r['steady']['sql_per_host'] <= TARGET_STEADY_SQL and
            r['steady']['placement_requests'] == 0 for r in steady)
        if steady else None))
    # NOTE(bench): the target is set at upstream's 2,401 rows (300 hosts);
    # a list of many more rows is measured, not judged against it.
    gets = [r for r in results if r.get('get_deployables') and
            abs(r['get_deployables']['rows'] - TARGET_GET_ROWS) <=
            TARGET_GET_ROWS / 10]
    found.append((
        'GET /v2/deployables with about %s rows <= %d ms median' % (
            f'{TARGET_GET_ROWS:,}', TARGET_GET_MS),
        '; '.join('%d rows: %.1f ms' % (r['get_deployables']['rows'],
                                        r['get_deployables']['p50_ms'])
                  for r in gets) or 'no run with that many rows',
        all(r['get_deployables']['p50_ms'] <= TARGET_GET_MS
            for r in gets) if gets else None))
    found.extend(scale_targets(results, args))
    return found


def scale_targets(results, args):
    """The scale-out targets: --no-placement runs of 10,000 hosts or more.
    """
    hosts = f'{TARGET_SCALE_HOSTS:,}'
    what = 'scale-out (--no-placement): '
    runs = [] if not args.no_placement else [
        r for r in results if r['hosts'] >= TARGET_SCALE_HOSTS]
    missing = ('not measured' if runs else
               'no --no-placement run of %s hosts or more' % hosts)
    rss = []
    for r in runs:
        # NOTE(bench): each round's own peak, the lists served included.
        peaks = [peak_rss(r.get(name)) for name in (
            'bootstorm', 'steady', 'get_deployables', 'get_devices',
            'teardown')]
        peaks = [mib for mib in peaks if mib is not None]
        if peaks:
            rss.append((r['hosts'], max(peaks)))
    figures = [
        ('converge <= %d s for %s hosts' % (TARGET_SCALE_CONVERGE_S, hosts),
         'bootstorm', 'converge_s', '%.1f s', TARGET_SCALE_CONVERGE_S),
        ('<= %d SQL statements per host for the bootstorm'
         % TARGET_SCALE_SQL, 'bootstorm', 'sql_per_host', '%.1f',
         TARGET_SCALE_SQL),
        ('steady state <= %.1f SQL statements per host'
         % TARGET_SCALE_STEADY_SQL, 'steady', 'sql_per_host', '%.2f SQL',
         TARGET_SCALE_STEADY_SQL)]
    found = []
    for label, round_name, key, form, limit in figures:
        measured = [(r['hosts'], r[round_name][key]) for r in runs
                    if r.get(round_name)]
        found.append(_judged(what + label, measured, form, limit, missing))
    found.append(_judged(what + '<= %d MiB peak RSS per conductor'
                         % TARGET_SCALE_RSS_MIB, rss, '%.1f MiB',
                         TARGET_SCALE_RSS_MIB, missing))
    return found


def _judged(label, measured, form, limit, missing):
    """(target, figures, met) of ``(hosts, value)`` pairs; a value of None
    (a round that did not converge) misses the target."""
    figures = '; '.join(
        '%d hosts: %s' % (hosts, '-' if value is None else form % value)
        for hosts, value in measured)
    met = all((math.inf if value is None else value) <= limit
              for _hosts, value in measured) if measured else None
    return label, figures or missing, met


def placement_floor(round_result):
    """Seconds Placement's own CPU time takes on every CPU of the machine.
    """
    return round_result['cpu_s']['Placement'] / os.cpu_count()


def plot(results, path):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    def series(round_name, key):
        return [float('nan') if (r.get(round_name) or {}).get(key) is None
                else r[round_name][key] for r in done]

    done = [r for r in results if r.get('bootstorm')]
    hosts = [r['hosts'] for r in done]
    fig, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4.5))
    left.plot(hosts, series('bootstorm', 'converge_s'), 'o-',
              label='converged (conductors and Placement)')
    left.plot(hosts, series('bootstorm', 'db_converge_s'), 's--',
              label='last conductor call returned')
    left.plot([TARGET_CONVERGE_HOSTS], [TARGET_CONVERGE_S], 'k*',
              markersize=10, label='target')
    left.set_ylabel('seconds')
    left.set_title('Bootstorm: time to converge')
    right.plot(hosts, series('bootstorm', 'sql_per_host'), 'o-',
               label='bootstorm')
    right.plot(hosts, series('steady', 'sql_per_host'), 's--',
               label='steady')
    right.axhline(TARGET_SQL, color='grey', linestyle=':',
                  label='bootstorm target')
    right.axhline(TARGET_STEADY_SQL, color='grey', linestyle='-.',
                  label='steady target')
    right.set_ylabel('SQL statements per host')
    right.set_title('Conductors\' SQL statements per host')
    for axes in (left, right):
        axes.set_xscale('log')
        axes.set_xlabel('hosts')
        axes.grid(True, which='both', alpha=0.3)
        axes.set_ylim(bottom=0)
        axes.legend(fontsize='small')
    fig.tight_layout()
    fig.savefig(path, dpi=120)
