"""The inputs an ensemble's members read: one transform of ``x`` per *input form*.

- ``"raw"``: ``x`` as the caller gave it (the service has already normalised it, or the model's
  ``normalize`` is ``"none"``): the form of every ensemble whose model normalises requests itself;
- ``"l2"``: ``x / ||x||_2`` (:func:`service.normalization.unit_l2`, the kernel the service applies
  to requests, so an ``"l2"`` member reads the same bits as a member of an L2-normalised model);
- ``"standard"``: online per-feature standardisation (:mod:`service.learners.standardise`).

The intercept is never transformed: each member appends it to its form of ``x``. The
standardisation's statistics are the only state here; they learn every labelled example (after
the transform of that example, which reads the statistics before it) and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..normalization import unit_l2, unit_l2_rows
from .errors import InvalidInput, InvalidParameter
from .inputs import SparseVector, canonical
from .standardise import fresh_statistics, standardise_rows

FORMS = ("raw", "l2", "standard")
STATE_KEYS = ("std_count", "std_mean", "std_m2")


def check_forms(forms: Sequence[str]) -> tuple[str, ...]:
    """``forms`` as a tuple, or :class:`InvalidParameter` (``inputs``): distinct known forms, and
    ``"raw"`` alone (an already normalised input is not normalised twice)."""
    out = tuple(forms)
    if not out or len(set(out)) != len(out) or not set(out) <= set(FORMS):
        raise InvalidParameter("inputs", f"must be distinct forms of {list(FORMS)}, got {list(forms)!r}")
    if "raw" in out and len(out) > 1:
        raise InvalidParameter("inputs", f'"raw" does not combine with other forms, got {list(forms)!r}')
    return out


class MemberInputs:
    """The transforms of one ensemble's input forms, and the standardisation's statistics."""

    def __init__(self, forms: Sequence[str], n_features: int) -> None:
        self.forms = check_forms(forms)
        self.n_features = n_features
        self.arrays = fresh_statistics(n_features) if "standard" in self.forms else {}

    def vectors(self, x: Any, learn: bool = False) -> dict[str, Any]:
        """``x`` in every form (``"raw"``: ``x`` untouched). With ``learn``, the statistics then learn
        ``x``. Raises :class:`InvalidInput` for a bad ``x`` before anything changes."""
        if self.forms == ("raw",):
            return {"raw": x}
        return dict(self.vectors_unchecked(canonical(x, self.n_features), learn))

    def vectors_unchecked(
        self, vector: SparseVector, learn: bool = False, forms: Sequence[str] | None = None
    ) -> dict[str, SparseVector]:
        """:meth:`vectors` of a canonical vector validated at the edge (the service's feature
        parser), not checked again: the same transforms, the same bits. ``forms`` limits the output
        to some forms (all by default); with ``learn`` the statistics learn ``vector`` whether or not
        the standardised form is asked for."""
        if self.forms == ("raw",):
            return {"raw": vector}
        wanted = self.forms if forms is None else tuple(forms)
        learns = learn and "standard" in self.forms
        if not wanted and not learns:
            return {}
        idx, val = nonzero(vector)  # what canonical() gives the checked path
        out: dict[str, SparseVector] = {}
        if "l2" in wanted:
            out["l2"] = (idx, unit_l2(val))
        if "standard" in wanted or learns:
            dense = np.zeros((1, self.n_features))
            dense[0, idx] = val
            z = self._standardise(dense, learn)[0]
            nz = np.flatnonzero(z)
            if "standard" in wanted:
                out["standard"] = (nz.astype(np.int64), z[nz])
        return out

    def streams(self, X: Any, y: Any) -> dict[str, Any]:
        """The rows of ``X`` in every form, the statistics learning each row in turn; ``X`` and the
        labels ``y`` are checked first (:class:`InvalidInput`, nothing changed)."""
        if self.forms == ("raw",):
            return {"raw": X}  # the members check it
        csr = stream_matrix(X, self.n_features)
        labels = np.asarray(y)
        if labels.shape != (csr.shape[0],):
            raise InvalidInput("y", f"must have one label per row ({csr.shape[0]}), got {labels.shape}")
        if not np.isin(labels, (-1, 1)).all():
            raise InvalidInput("y", "every label must be -1 or +1")
        out: dict[str, Any] = {}
        if "l2" in self.forms:
            l2 = csr.copy()
            l2.data = unit_l2_rows(l2.indptr.astype(np.int64), l2.data)
            out["l2"] = l2
        if "standard" in self.forms:
            out["standard"] = sp.csr_matrix(self._standardise(csr.toarray(), True))
        return out

    def _standardise(self, dense: np.ndarray, learn: bool) -> np.ndarray:
        a = self.arrays
        return np.asarray(standardise_rows(dense, a["std_count"], a["std_mean"], a["std_m2"], learn))

    # --- state ----------------------------------------------------------------------------

    def state(self, share: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
        return {key: share(arr) for key, arr in self.arrays.items()}

    def checked_state(self, state: Any) -> dict[str, np.ndarray]:
        """Copies of this form's arrays in ``state``, checked against the current ones."""
        fresh = {}
        for key, current in self.arrays.items():
            arr = np.asarray(state.get(key))
            if arr.dtype != current.dtype or arr.shape != current.shape:
                raise InvalidInput(
                    "state", f"{key!r} has {arr.dtype}{arr.shape}, expected {current.dtype}{current.shape}"
                )
            fresh[key] = np.array(arr, copy=True, order="C")
        return fresh

    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self.arrays.values())

    def migrated(self, source: np.ndarray) -> MemberInputs:
        """These inputs on a new schema: feature ``j`` keeps old feature ``source[j]``'s statistics,
        an augmented one (``-1``) starts from mean 0 and no spread, as if absent so far."""
        new = MemberInputs(self.forms, int(source.shape[0]))
        if self.arrays:
            kept = source >= 0
            new.arrays["std_count"][:] = self.arrays["std_count"]
            for key in ("std_mean", "std_m2"):
                new.arrays[key][kept] = self.arrays[key][source[kept]]
        return new


def nonzero(vector: SparseVector) -> SparseVector:
    """``vector`` without its explicit zeros (itself when it has none)."""
    idx, val = vector
    if val.all():
        return vector
    keep = val != 0.0
    return idx[keep], val[keep]


def stream_matrix(X: Any, n_features: int) -> sp.csr_matrix:
    """``X`` as a canonical CSR matrix (no intercept), or :class:`InvalidInput`."""
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise InvalidInput("X", f"must be 2-D, got shape {X.shape}")
    csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
    if csr.shape[1] != n_features:
        raise InvalidInput("X", f"has {csr.shape[1]} columns, expected n_features = {n_features}")
    if not np.isfinite(csr.data).all():
        raise InvalidInput("X", "contains NaN or inf")
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr
