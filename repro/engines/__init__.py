"""Layer 7: compute engines. Each turns a configuration into a record cached in the result store:
``heads`` (head scoring and pruning, text and images), ``prune`` (unstructured / N:M pruning), ``bandit``
(unit search, evaluation and removal); ``base``: the model, setup and windows they share, and which
records each owns; ``plan``: cells as jobs. Engines know no paper: the papers (:mod:`repro.papers`) build
them and read their records."""
