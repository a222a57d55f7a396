# SPDX-License-Identifier: MIT
"""The package's PEP 517 build backend: scikit-build-core's, with the build's output shown
on the user's terminal.

pip runs a build backend in a child process with its output captured (and its standard
input a closed pipe) and shows that output only with ``pip -v`` or when the build fails,
so ``pip install ./python`` would sit on a spinner for the minute or two the kernels take
to compile. When pip itself writes to a terminal (its standard output, read from
/proc/<pip>/fd/1, is a terminal device, or that cannot be read) and the process has a
controlling terminal (``/dev/tty`` opens), the output of CMake and the compiler goes to
that terminal as it comes instead of into pip's capture; if the build then fails, the
whole output is also handed to pip, which prints it with its error. Otherwise (CI, cron,
``pip install … > log``) nothing changes: pip captures the output and shows it with
``-v``. ``ATTNBENCH_BUILD_TTY=0`` turns the terminal output off.

Every hook is scikit-build-core's; build_wheel and build_editable run inside the redirect.
"""

import contextlib
import os
import sys
import threading

from scikit_build_core import build as _skbuild
from scikit_build_core.build import *  # noqa: F401,F403 (the other hooks, unchanged)


def _parent_on_terminal():
    """Whether the parent process (pip) writes its standard output to a terminal."""
    try:
        out = os.readlink(f"/proc/{os.getppid()}/fd/1")
    except OSError:  # no /proc, or not ours to read: cannot tell
        return True
    return out.startswith(("/dev/pts/", "/dev/tty", "/dev/console"))


def _terminal():
    """The controlling terminal opened for writing, or None (none, pip's output is not a
    terminal, or turned off)."""
    if os.environ.get("ATTNBENCH_BUILD_TTY", "1") == "0" or not _parent_on_terminal():
        return None
    try:
        return os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        return None


@contextlib.contextmanager
def _output_to_terminal():
    """File descriptors 1 and 2 (this process's and its children's, CMake's included) go
    to the terminal while the block runs; on an exception the collected output is also
    written to the original descriptor 1 (pip's capture) before it propagates."""
    tty = _terminal()
    if tty is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    r, w = os.pipe()
    os.dup2(w, 1)
    os.dup2(w, 2)
    os.close(w)
    collected = []

    def pump():
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                return
            collected.append(chunk)
            try:
                os.write(tty, chunk)
            except OSError:  # the terminal went away: pip still gets it on failure
                pass

    pumper = threading.Thread(target=pump, daemon=True)
    pumper.start()
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_out, 1)  # the pipe's last write ends close: the pump sees EOF
        os.dup2(saved_err, 2)
        pumper.join()
        os.close(r)
        os.close(tty)
        if failed:
            for chunk in collected:
                os.write(saved_out, chunk)
        os.close(saved_out)
        os.close(saved_err)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _output_to_terminal():
        return _skbuild.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    with _output_to_terminal():
        return _skbuild.build_editable(wheel_directory, config_settings, metadata_directory)
