"""Server operation: what the page and an operator's own server need around a shared model.

The page serves many sessions from one process: each model is used under its own lock, hooks are
counted to prove none is left behind, and an out-of-memory failure is recognised and its memory
handed back before the next request.
"""

from ._hooks import model_lock
from .capture import hook_count, is_out_of_memory, release_memory
from .weights import checkpoint_path

__all__ = ["checkpoint_path", "hook_count", "is_out_of_memory", "model_lock", "release_memory"]
