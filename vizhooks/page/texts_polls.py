"""The class poll's sentences: what the code needs besides the texts, which are in the catalogue
(vizhooks/locale/<lang>/LC_MESSAGES/vizhooks.po, section 'polls'; vizhooks/i18n.py).

Every lesson question (``lesson_<id>_q``) gets three or four short choices ``lesson_<id>_c1`` ..
``_c4``, read on a projector in seconds: exactly one agrees with ``lesson_<id>_a``, the others are
misconceptions students really hold. ``CORRECT`` gives the 0-based position of the right one.
"""

from __future__ import annotations

#: step id -> 0-based index of the correct choice (c1 is 0); varied so the position gives nothing away
CORRECT: dict[str, int] = {
    "what": 1,
    "forward": 2,
    "prehook": 0,
    "shapes": 1,
    "tensor": 3,
    "clamp": 1,
    "backward": 0,
    "gradcam": 2,
    "remove": 3,
    "conv": 0,
    "sanity": 2,
    "patching": 3,
    "relevance": 0,
    "concepts": 1,
    "audit": 2,
}
