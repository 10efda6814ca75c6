"""A bench's temporary working directory, removed however the run ends."""

import shutil
import tempfile


def run_in_tempdir(run, args):
    """``run(args, workdir)`` in a new directory below ``args.dir`` (the
    system's temporary directory when None), removed afterwards."""
    workdir = tempfile.mkdtemp(prefix='cyborg-bench-', dir=args.dir)
    try:
        return run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
