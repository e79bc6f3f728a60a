"""prune-repro: reproduce transformer-pruning papers (MP-G, OGAS, damage-aware bandit pruning).

Layers, each importing only the ones above it in this list:
assets -> arch -> structure -> calib -> methods -> evaluate -> store/report -> experiments -> cli.
"""
__version__ = "0.1.0"
