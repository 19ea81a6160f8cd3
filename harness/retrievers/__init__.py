"""Retrievers. Each back-end is one module; the model registry maps names to ``module:Class`` lazily."""
