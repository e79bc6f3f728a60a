"""prune-repro: reproduce transformer-pruning papers (MP-G, OGAS, damage-aware bandit pruning).

Layers, each importing only the ones before it in this list (``tests/test_layers.py`` checks it):
assets -> arch -> structure -> calib -> methods -> evaluate -> store / report / claims -> experiments
-> notebooks / cli. ``errors`` and ``progress`` serve every layer.
"""
__version__ = "0.1.0"
