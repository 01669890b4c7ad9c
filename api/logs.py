"""Key secrets never reach a log line.

We never log the Authorization header ourselves; what remains is a key a client put where
it does not belong, such as a query string, which uvicorn's access log writes verbatim.
The API masks anything shaped like a key through the process's one redaction mechanism
(quarry.redaction): `qk_...` becomes `qk_***`, as does a Bearer credential.
"""

from __future__ import annotations

import re

from quarry.redaction import mask_shape
from registry.keys import KEY_PREFIX

KEY_SHAPE = re.compile("(" + re.escape(KEY_PREFIX) + r")[0-9A-Za-z]{6,}")


def mask_keys() -> None:
    """Mask key-shaped text in every log record of this process (idempotent)."""
    mask_shape(KEY_SHAPE)
