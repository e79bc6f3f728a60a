"""Layer 4: pruning methods (pure scorers and mask builders over adapters and calibration): head
scorers (``heads``), unstructured / N:M pruners (``unstructured``), unit selectors (``bandit``), each
a :class:`repro.methods.registry.Registry` of one :class:`~repro.methods.registry.Method` shape."""
from repro.methods.heads import HEAD_METHODS, score_heads, select_heads

__all__ = ["HEAD_METHODS", "score_heads", "select_heads"]
