"""Layer 4: pruning methods (pure scorers and mask builders over adapters and calibration)."""
from repro.methods.heads import HEAD_METHODS, score_heads, select_heads

__all__ = ["HEAD_METHODS", "score_heads", "select_heads"]
