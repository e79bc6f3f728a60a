"""Layer 5: evaluation: perplexity (``ppl``), prefix-reusing unit damage (``prefix``), speed and
parameter counts (``speed``), paired statistics (``stats``), lm-eval zero-shot (``zeroshot``),
image classification (``vision``) and masked-LM pseudo-perplexity (``mlm``)."""
from repro.evaluate.ppl import PPLResult, perplexity
from repro.evaluate.stats import bootstrap_ci, ppl_ci

__all__ = ["PPLResult", "perplexity", "bootstrap_ci", "ppl_ci"]
