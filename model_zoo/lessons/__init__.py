"""The lessons' measures: what a page shows, computed from a model's outputs (plain functions and frozen
dataclasses, shapes in their docstrings). They run models through model_zoo's runtime (the package root:
registry, loading, the model classes) and never train one; model_zoo.training trains the models."""
