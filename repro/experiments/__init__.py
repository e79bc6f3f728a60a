"""Layer 7: experiment cells for the notebooks, each cached as one record in the result store."""
