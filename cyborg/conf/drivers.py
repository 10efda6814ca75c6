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
]


def register_opts(conf):
    conf.register_group(FAKE_GROUP)
    conf.register_opts(fake_opts, group=FAKE_GROUP)


def list_opts():
    return {FAKE_GROUP: fake_opts}
