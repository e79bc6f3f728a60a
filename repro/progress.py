"""Progress bars: ``tqdm.auto`` (widgets in JupyterLab, text in a terminal), or plain text bars
when ``REPRO_PROGRESS=text`` (set by ``repro.notebooks.execute``, so a papermill run shows its
progress in the log and leaves no widget state in the executed notebook)."""
from __future__ import annotations

import os


def tqdm(*args, **kwargs):
    if os.environ.get("REPRO_PROGRESS") == "text":
        from tqdm.std import tqdm as bar
    else:
        from tqdm.auto import tqdm as bar
    return bar(*args, **kwargs)
