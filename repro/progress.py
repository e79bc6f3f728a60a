"""Progress bars: ``tqdm.auto`` (widgets in JupyterLab, text in a terminal), or plain text bars
when ``REPRO_PROGRESS=text`` (set by ``repro.notebooks.execute``, so a papermill run shows its
progress in the log and leaves no widget state in the executed notebook), or none with
``REPRO_PROGRESS=off`` (the workers of ``repro run``, which print one line per finished cell)."""
from __future__ import annotations

import os


def tqdm(*args, **kwargs):
    if os.environ.get("REPRO_PROGRESS") == "off":
        kwargs["disable"] = True
    if os.environ.get("REPRO_PROGRESS") == "text":
        from tqdm.std import tqdm as bar
    else:
        from tqdm.auto import tqdm as bar
    return bar(*args, **kwargs)
