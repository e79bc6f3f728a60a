"""Layer 8: one package per paper (``mpg``, ``ogas``, ``bandit``). Each holds notebook N's grid (the
experiments it builds on the engines of :mod:`repro.engines` and the cells it asks for, listed once) and
its readers: pure functions of records that give the notebook's frames, tables, claims and prose. No
paper imports another (``tests/test_layers.py``); what two papers share lives in a lower layer."""
