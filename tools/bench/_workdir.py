"""A bench's temporary working directory, removed however the run ends."""

import os
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


def copy_logs(workdir, destination):
    """Copy the services' ``*.log`` files of ``workdir`` into
    ``destination`` (made if needed); nothing when it is None."""
    if not destination:
        return
    os.makedirs(destination, exist_ok=True)
    for name in os.listdir(workdir):
        if name.endswith('.log'):
            shutil.copy(os.path.join(workdir, name), destination)
