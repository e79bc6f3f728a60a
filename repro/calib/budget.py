"""What a calibration-driven search cost, counted by whoever feeds the batches (the unit
evaluator of ``repro.evaluate.prefix``) and reported by the selectors of ``repro.methods.bandit``."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Budget:
    """What a run cost (the paper's Table B1 keeps these apart)."""
    calibration_passes: int = 0   # scorer passes over a calibration mini-batch (forward or forward+backward)
    backward_passes: int = 0      # of which with a backward pass (Taylor, Fisher)
    paired_evaluations: int = 0   # damage estimates (pulls / trials)
    candidate_losses: int = 0     # losses of mask + candidate on one mini-batch (batches_per_eval per pull)
    baseline_losses: int = 0      # losses of the current mask on one mini-batch (after each change)
    layer_forwards: int = 0       # one layer run on one mini-batch, over everything above
    seconds: float = 0.0
