"""Layer 5: evaluation (perplexity, speed, statistics; zero-shot and vision as they land)."""
from repro.evaluate.ppl import PPLResult, perplexity
from repro.evaluate.stats import bootstrap_ci, ppl_ci

__all__ = ["PPLResult", "perplexity", "bootstrap_ci", "ppl_ci"]
