"""prune-repro: reproduce transformer-pruning papers (MP-G, OGAS, damage-aware bandit pruning).

Layers, each importing only the ones before it in this list (``tests/test_layers.py`` checks it):
assets -> arch -> structure -> calib -> methods -> evaluate -> store / report / claims / migrate ->
engines -> papers -> notebooks / jobs / cli (with its argument types, ``cliargs``). ``errors`` and ``progress`` serve every layer.

- ``engines``: a configuration in, a cached record out (head pruning, unstructured pruning, unit search),
  knowing no paper;
- ``papers``: one package per paper (``mpg``, ``ogas``, ``bandit``), each the notebook's grid declared once
  plus pure readers of its records; no paper imports another.
"""
__version__ = "0.1.0"
