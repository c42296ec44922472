"""Setting a model's drift policy (:data:`service.drift.POLICIES`): a log entry, so that every replica
and every recovery applies it at the same label, and resets (under ``reset``) at the same labels."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from model_store import GenerationGone

from ..drift import POLICIES, POLICY_EVENT
from .errors import InvalidRequest, ModelGone
from .replica import ModelReplica


class DriftPolicies:
    """Write drift-policy entries to a model's log; see the module docstring."""

    def __init__(self, serving: Callable[[str], ModelReplica], max_challengers: int) -> None:
        self.serving = serving
        self.max_challengers = max_challengers

    async def set(self, name: str, policy: str) -> int | None:
        """Set ``name``'s policy; the log position of the entry once applied here (None when this
        replica did not apply it: it was applied before, in another process's memory)."""
        if policy not in POLICIES:
            raise InvalidRequest("on_drift", f"must be one of {list(POLICIES)}, got {policy!r}")
        replica = self.serving(name)
        body = json.dumps({"on_drift": policy, "limit": self.max_challengers}).encode()
        # a retry of this request (same generation, same version seen, same policy) finds its entry
        digest = hashlib.sha256(b"%d:%d:" % (replica.generation, replica.runtime.version) + body).hexdigest()
        try:
            applied = await replica.append_event(POLICY_EVENT, body, digest[:32])
        except GenerationGone as exc:
            raise ModelGone("model", f"model {name!r}: {exc}") from None
        return None if applied is None else applied.seq
