"""Options of the driver groups that the foundation ships ([fake_driver])."""

from oslo_config import cfg

FAKE_GROUP = cfg.OptGroup(
    'fake_driver',
    title='Fake driver options',
    help='The fake driver reports simulated FPGA devices. It needs no '
         'hardware and is what the embedded default and the tests use.')

fake_opts = [
    cfg.IntOpt(
        'device_count',
        default=1,
        min=0,
        max=4096,
        help='Number of simulated devices the fake driver reports.'),
    cfg.IntOpt(
        'accelerators_per_device',
        default=16,
        min=1,
        max=1024,
        help='Number of assignable accelerators (attach handles) on each '
             'simulated device.'),
    cfg.StrOpt(
        'attach_type',
        default='TEST_PCI',
        choices=[('TEST_PCI', 'Handles need nothing on the host at bind.'),
                 ('MDEV', 'Handles are prepared at bind and released at '
                          'unbind, as mediated devices are; the fake '
                          'driver creates none, it only takes '
                          'prepare_delay.')],
        help='Attach type of the simulated handles.'),
    cfg.FloatOpt(
        'prepare_delay',
        default=0.0,
        min=0.0,
        max=600.0,
        help='Seconds the fake driver takes to prepare an MDEV handle (see '
             'attach_type) at bind, as a real driver creating a mediated '
             'device does. For tests that must catch a bind half-way '
             '(killing the conductor that runs it); 0 is at once.'),
    cfg.FloatOpt(
        'program_delay',
        default=0.0,
        min=0.0,
        max=600.0,
        help='Seconds the fake driver takes to program a simulated '
             'deployable (it loads nothing; it logs the image and '
             'sleeps), as loading a real FPGA bitstream takes a while. '
             'For tests that must send a second request while the first '
             'programming still runs (device claims across conductors); '
             '0 is at once.'),
    cfg.StrOpt(
        'prepare_failure',
        default='',
        help='When set, every MDEV handle the fake driver prepares fails '
             '(after prepare_delay) with this text as the reason, so the '
             'bind fails on this host; for tests of Nova\'s handling of a '
             'failed bind. Empty: prepares succeed.'),
    cfg.BoolOpt(
        'scrub_on_release',
        default=False,
        help='Take the scrub path when the last accelerator request on a '
             'simulated deployable unbinds: its capacity is reserved in '
             'Placement while the fake driver "scrubs" it (nothing real). '
             'Off by default: the extra Placement writes after each unbind '
             'would race with tests that do not expect them.'),
    cfg.StrOpt(
        'scrub_failure',
        default='',
        help='When set, every scrub of the fake driver fails with this '
             'text as the reason (the device then becomes failed); for '
             'tests of the scrub failure path. Empty: scrubs succeed.'),
]


def register_opts(conf):
    conf.register_group(FAKE_GROUP)
    conf.register_opts(fake_opts, group=FAKE_GROUP)


def list_opts():
    return {FAKE_GROUP: fake_opts}
