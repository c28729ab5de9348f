"""Concepts: what a layer has learned over many photos, as directions found by non-negative matrix
factorisation of crop activations (CRAFT), each with its importance for a class and what the model says
without it.

``vizhooks.concepts`` is the public name; the code lives in :mod:`vizhooks.interpret.concepts`.
"""

from vizhooks.interpret.concepts import (
    Ablation,
    Concepts,
    ConceptsError,
    ablate,
    concept_direction,
    concept_maps,
    discover,
)

__all__ = ["Ablation", "Concepts", "ConceptsError", "ablate", "concept_direction", "concept_maps", "discover"]
