"""The audit of a labelled folder: predictions, the confusion matrix, each picture's explanation map and
clusters of those maps per class (SpRAy) that give a shortcut away.

``vizhooks.audit`` is the public name; the code lives in :mod:`vizhooks.interpret.audit`, beside the
explanation methods it uses.
"""

from vizhooks.interpret.audit import Audit, AuditError, Cluster, audit, class_folders, match_classes

__all__ = ["Audit", "AuditError", "Cluster", "audit", "class_folders", "match_classes"]
