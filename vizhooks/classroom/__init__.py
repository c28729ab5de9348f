"""Classes: a teacher who leads, students who follow, polls and a gallery, in a store shared by the
page's sessions (in this process, or Redis for several servers). See core.py and store.py."""

from vizhooks.classroom.core import (
    ClassError,
    ClassLimitError,
    Classroom,
    ClassState,
    GalleryPhoto,
    NotTeacherError,
    Teacher,
    UnknownClassError,
    action_number,
    normalise_code,
    open_store,
)
from vizhooks.classroom.store import MemoryStore, Store, StoreUnavailableError

__all__ = ["ClassError", "ClassLimitError", "ClassState", "Classroom", "GalleryPhoto", "MemoryStore",
           "NotTeacherError", "Store", "StoreUnavailableError", "Teacher", "UnknownClassError", "action_number",
           "normalise_code", "open_store"]
