"""Warnings the workbench gives a user (a damaged result or checkpoint set aside), each one
line: ``thinwire:0: ThinwireWarning: <what happened and what follows>``.

``warnings.warn`` would add the caller's file, line and source line, which show thinwire's
own code rather than anything the user wrote; ``warn`` leaves them out. The category is a
``UserWarning``, so the usual filters silence or raise it.
"""

from __future__ import annotations

import warnings


class ThinwireWarning(UserWarning):
    """Something a run recovered from (a damaged file set aside, a run to recompute)."""


def warn(message: str) -> None:
    warnings.warn_explicit(message, ThinwireWarning, filename="thinwire", lineno=0, module="thinwire")
