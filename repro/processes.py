"""Process-level helpers of the local executor (:mod:`repro.jobs`): a worker that ends with its driver, and
Ctrl-C held back while a worker is being started."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager


def die_with_parent(parent: int, every: float = 0.5) -> None:
    """End this process as soon as ``parent`` (the driver's pid) is gone, however it died: SIGKILL by the OOM
    killer leaves the driver no moment to stop its workers, and a worker holds both ends of its task pipe, so it
    would wait on it for ever. Linux sends the death signal itself (``PR_SET_PDEATHSIG``); elsewhere, and as a
    second guard, a daemon thread watches for the worker being re-parented."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)  # noqa: SLF001 - nothing of a half-computed cell is kept: records are written atomically

    if os.getppid() != parent:  # the driver died before this worker got here
        os._exit(1)
    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


@contextmanager
def sigint_deferred():
    """Ctrl-C held back until the block ends, then raised as one ``KeyboardInterrupt``.

    Starting a spawned worker is two steps, start the process, then write it its preparation data:
    an interrupt between them left a child reading an empty pipe, which printed an ``EOFError``
    traceback and was never terminated (it was not yet the pool's). SIGINT is blocked in this thread
    for the block, so children started in it inherit it blocked (a terminal's Ctrl-C reaches the
    whole process group) until their initializer ignores it; one that reaches another thread is
    recorded by the handler and raised here."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *_: caught.append(1))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending SIGINT arrives now, caught or not
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
