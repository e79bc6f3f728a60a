"""Layer 7: experiments. Engines turn a configuration into a record cached in the result store
(``heads``: head pruning, ``unstructured``: unstructured / N:M pruning, ``units``: unit search and
removal; ``base``: what they share, and which records each owns); one reader per paper turns
records into its tables, figures' data and claims (``mpg``, ``ogas``, ``bandit``), running no model."""
