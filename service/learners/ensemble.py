"""``eta = "auto"``: online selection over members, without hindsight.

The paper picks ``eta`` per data set from the whole stream's results; a service cannot.
:class:`EtaGrid` runs members of one algorithm, one per ``eta`` of a grid (default
``{0.3, 1, 3, 10, 30}``, chosen by ``python -m bench.quality --study``: on L2-normalised
streams it beat the decade grid ``{0.01, ..., 100}`` on mean sum and mean cost over the
nine benchmark data sets, see ``docs/benchmarks.md``) and, with ``losses`` (``loss="auto"`` in
:func:`service.learners.create`), per loss: ``len(losses) * len(grid)`` members, loss-major in the
order given (loss II first by default). Every member learns every label.

**Families and input forms** (:mod:`service.learners.roster`). ``families`` adds learners over a
feature map that span the same losses and grid (ACOG-diag over the quadratic features
``D = d + d (d + 1) / 2``, the degree-2 polynomial kernel ``x . x' + (x . x')^2``); ``forests``
adds learners without a rate or a loss (the forest, the nearest neighbours), one member each per
input form (or per form of their ``inputs`` option). ``inputs`` runs every family
once per input form (:mod:`service.learners.member_inputs`: per-example L2, online
standardisation, or the input as given). Members are ordered family by family (the linear one
first), then by input form, then by ``(loss, eta)``, so a tie goes to a linear member. With
``inputs=("raw",)`` and no families the ensemble is the linear one of earlier versions, bit for
bit. Memory: every member's arrays (a diagonal Sigma and ``w`` over ``D + 1`` coordinates for the
quadratic family, 9 KB at ``d = 32``) and the standardisation's two vectors;
``python -m bench.ensemble_cost`` measures the cost per label against the linear ensemble.

**Combining** the members: ``selection="hedge"`` (:mod:`service.learners.hedge`) predicts by a
Fixed-Share vote of every member's score clipped to ``[-1, 1]``, weighted by its class-balanced
(``sum``) or cost-weighted (``cost``) mistakes, so that the vote moves to a member that becomes
better later (a forest after its first hundreds of labels), against a threshold chosen online; its
prior (:func:`service.learners.hedge.group_prior`) gives every family over an input form the same
mass, so ten linear members do not outvote one forest before any label; ``selection="leader"``
(:mod:`service.learners.selection`) predicts with the member with the best running objective over
all labels so far, ``"window"`` over the last ``window`` labels. ``python -m bench.quality.combiners``
compared them (and AdaNormalHedge, stacking, calibrated mixtures) on the tuning set.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..normalization import unit_l2_kernel_vector
from .base import STATE_FORMAT, Learner, StreamResult, UpdateInfo, read_only
from .errors import InvalidInput, InvalidParameter
from .hedge import VoteState, group_prior, hedge_vote
from .inputs import SparseVector, canonical_any
from .interface import LearnerInterface
from .member_inputs import MemberInputs, nonzero
from .member_steps import MemberSteps, Outcomes
from .roster import Family, check_family_fits, check_forests_fit, family_name
from .selection import Objective, Selection, Tally, best_member, check_options, objective_values, steps_of
from .standardise import standard_kernel_vector
from .vote import MemberScores

DEFAULT_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)


class EtaGrid(LearnerInterface):
    """Members that differ in ``eta``, the loss, the family and the input form; predictions follow
    the best so far."""

    def __init__(
        self,
        algorithm: type[Learner],
        n_features: int,
        *,
        grid: Sequence[float] = DEFAULT_GRID,
        objective: Objective = "sum",
        alpha_p: float = 0.5,
        c_p: float = 0.9,
        selection: Selection = "leader",
        window: int = 1000,
        losses: Sequence[str] | None = None,
        families: Sequence[Family] = (),
        forests: Sequence[Family] = (),
        inputs: Sequence[str] = ("raw",),
        **params: Any,
    ) -> None:
        if "eta" not in algorithm.param_spec():
            raise InvalidParameter("eta", f'{algorithm.algorithm} has no learning rate to set to "auto"')
        check_options(grid, objective, selection, c_p, window)
        if losses is not None:
            if "loss" not in algorithm.param_spec():
                raise InvalidParameter("loss", f'{algorithm.algorithm} has no loss to set to "auto"')
            if not losses or len(set(losses)) != len(losses) or not set(losses) <= {"I", "II"}:
                raise InvalidParameter(
                    "loss", f'the losses of "auto" must be distinct "I"/"II", got {losses!r}'
                )
        self.inputs = MemberInputs(inputs, int(n_features))
        forms = self.inputs.forms
        if "rho" in algorithm.param_spec():
            params["alpha_p"] = alpha_p
        values = tuple(float(v) for v in grid)
        configs = [(loss, eta) for loss in (losses if losses is not None else [None]) for eta in values]
        spanning: list[Family] = [(algorithm, {}), *families]
        self.members: list[Learner] = []
        self.member_algorithms: list[str] = []
        self.member_forms: list[str] = []
        for k, (cls, options) in enumerate(spanning):
            shared = params if k == 0 else {key: v for key, v in params.items() if key in cls.param_spec()}
            check_family_fits(cls, n_features, {**shared, **options}, copies=len(configs) * len(forms))
            name = cls.algorithm if k == 0 else family_name((cls, options))
            for form in forms:
                for loss, eta in configs:
                    extra = {} if loss is None else {"loss": loss}
                    self.members.append(cls(n_features, eta=eta, **{**shared, **options, **extra}))
                    self.member_algorithms.append(name)
                    self.member_forms.append(form)
        for cls, family_options in forests:
            options = {key: v for key, v in family_options.items() if key != "inputs"}
            own_forms = [f for f in forms if f in family_options.get("inputs", forms)] or list(forms)
            shared = {key: v for key, v in params.items() if key in cls.param_spec()}
            check_forests_fit(cls, n_features, {**shared, **options}, copies=len(own_forms))
            for form in own_forms:
                self.members.append(cls(n_features, **{**shared, **options}))
                self.member_algorithms.append(family_name((cls, options)))
                self.member_forms.append(form)
        self.configs: list[tuple[str | None, float | None]] = [
            (m.params.get("loss"), m.params.get("eta")) for m in self.members
        ]
        self.families, self.forests = tuple(families), tuple(forests)
        self.grid, self.losses = values, tuple(losses) if losses is not None else None
        self.algorithm = f"auto:{algorithm.algorithm}"
        self.n_features = int(n_features)
        self.objective: Objective = objective
        self.alpha_p, self.c_p = alpha_p, c_p
        self.selection: Selection = selection
        self.window = window
        self._by_form = {f: [k for k, g in enumerate(self.member_forms) if g == f] for f in forms}
        self._forms_in_kernels = set(forms) <= {"l2", "standard"} and not any(
            self.members[ks[0]].needs_presence for ks in self._by_form.values()
        )
        """Whether :meth:`_unchecked_kernels` makes every form by one kernel (no member reads presence)."""
        # members whose learn_checked is the contract's own: their kernel is called directly
        self._steps = MemberSteps(self.members, self.member_forms)
        self._outcomes = Outcomes.empty(len(self.members))
        """Every member's outcome of the round being learned (written over by each round)."""
        self._scores = MemberScores(self.members, self.member_forms)
        self._tally = Tally(len(self.members), window)
        # the hedge vote: its prior (every family over an input form the same mass), weights, thresholds
        groups = list(zip(self.member_algorithms, self.member_forms, strict=True))
        self._vote_state = VoteState(group_prior(groups))
        self._leader: int | None = None  # cache of leader(); None once the counts change
        self._borrows = 0

    # --- selection ------------------------------------------------------------------------

    def leader(self) -> int:
        """Index of the member that predicts now, or with ``"hedge"`` the heaviest in the vote
        (recomputed only after the counts change)."""
        if self._leader is None and self.selection == "hedge":
            self._leader = int(np.argmax(self._vote_state.log_w))
        if self._leader is None:
            counts = self._tally.counts if self.selection == "leader" else self._tally.window_counts
            self._leader = int(best_member(objective_values(counts, self.objective, self.alpha_p, self.c_p)))
        return self._leader

    @property
    def eta(self) -> float:
        """The learning rate in use (NaN while a member without one leads)."""
        eta = self.configs[self.leader()][1]
        return math.nan if eta is None else float(eta)

    @property
    def loss(self) -> str | None:
        """The loss in use (None for a member without one)."""
        return self.configs[self.leader()][0]

    def describe(self) -> dict[str, Any]:
        """``{"eta": {"selected", "loss", "leader", "members"}}``: the rate and loss in use, the
        leading member's index and every member's loss, eta and objectives
        (:meth:`member_objectives`); with the hedge vote also its ``"vote_threshold"`` now; plus
        the leader's own facts (its ``"sketch"``, say)."""
        leader = self.leader()
        eta = self.configs[leader][1]
        facts = {"selected": eta, "loss": self.loss, "leader": leader, "members": self.member_objectives()}
        if self.selection == "hedge":
            facts["vote_threshold"] = self._threshold()
        return {**self.members[leader].describe(), "eta": facts}

    def member_objectives(self) -> list[dict[str, Any]]:
        """Each member's loss, eta and running objective (all-time and over the window), and, once
        there is more than one, its learner and input form."""
        tally = self._tally
        all_time = objective_values(tally.counts, self.objective, self.alpha_p, self.c_p)
        windowed = objective_values(tally.window_counts, self.objective, self.alpha_p, self.c_p)
        sign = -1.0 if self.objective == "cost" else 1.0
        out = [
            {"loss": loss, "eta": eta, "objective": sign * float(a), "window_objective": sign * float(w)}
            for (loss, eta), a, w in zip(self.configs, all_time, windowed, strict=True)
        ]
        if self.families or self.forests:
            for member, name in zip(out, self.member_algorithms, strict=True):
                member["algorithm"] = name
        if self.inputs.forms != ("raw",):
            for member, form in zip(out, self.member_forms, strict=True):
                member["input"] = form
        if self.selection == "hedge":
            for member, w in zip(out, self._vote_state.weights(), strict=True):
                member["weight"] = float(w)
        return out

    # --- the learner contract -------------------------------------------------------------

    def score(self, x: Any) -> float:
        """The leader's score, or with ``"hedge"`` the weighted vote of the members' margins less the
        vote's threshold (in ``[-1.4, 1.4]``; its sign is the prediction). Over input forms, ``x`` is
        checked once (:func:`~service.learners.inputs.canonical_any`) and scored as
        :meth:`score_unchecked` scores it (the same bits)."""
        if self.inputs.forms != ("raw",):
            return self.score_unchecked(canonical_any(x, self.n_features))
        if self.selection == "hedge":
            return self._vote(self._checked_kernels(self.inputs.vectors(x), 1))
        leader = self.leader()
        return self.members[leader].score(x)

    def score_unchecked(self, vector: SparseVector) -> float:
        """:meth:`score` of a vector validated at the edge: each input form is still made (L2,
        standardisation), only the checks are not repeated."""
        if self.selection == "hedge":
            vote = self._scores.l2_vote(self.members, vector, self._vote_state.log_w)
            return self._vote(self._unchecked_kernels(vector)) if vote is None else vote - self._threshold()
        leader = self.leader()
        form = self.member_forms[leader]
        kernel = self._unchecked_kernels(vector, forms=(form,))[form]
        return self.members[leader].score_checked(kernel)

    def predict_unchecked(self, vector: SparseVector) -> int:
        """The sign of :meth:`score_unchecked`, the same label. With the hedge vote the members in
        calls (linear, quadratic) answer first; the others (forest, neighbours: the dearest) are
        asked in decreasing weight only while their weight could still move the vote across the
        threshold, with a margin far above rounding; a vote that close to it is summed in full."""
        if self.selection != "hedge" or not self._scores.alone:
            return super().predict_unchecked(vector)
        log_w, members, theta = self._vote_state.log_w, self.members, self._threshold()
        w = np.exp(log_w - log_w.max())
        kernels, row = self._unchecked_kernels(vector), np.zeros(len(members))
        self._scores.fill_calls(members, kernels, row)
        at = self._scores.in_calls
        vote = float(w[at] @ np.clip(row[at], -1.0, 1.0)) - theta * float(w.sum())
        alone = sorted(self._scores.alone, key=lambda kf: -w[kf[0]])
        left, margin = sum(float(w[k]) for k, _ in alone), 1e-9 * float(w.sum())
        for k, form in alone:
            if abs(vote) > left + margin:
                return 1 if vote > 0.0 else -1
            row[k] = members[k].score_checked(kernels[form])
            vote += float(w[k]) * min(1.0, max(-1.0, float(row[k])))
            left -= float(w[k])
        return 1 if hedge_vote(log_w, row) - theta >= 0.0 else -1

    def learn(self, x: Any, y: Any) -> UpdateInfo:
        """One round of every member; over input forms, ``x`` is checked once (before anything
        changes) and learned as :meth:`learn_unchecked` learns it (the same bits)."""
        self._refuse_if_borrowed()
        label = Learner._label(y)
        if self.inputs.forms != ("raw",):
            return self.learn_unchecked(canonical_any(x, self.n_features), label)
        vectors = self.inputs.vectors(x, learn=True)  # checks x before anything changes
        return self._learn_members(self._checked_kernels(vectors, label), label)

    def learn_unchecked(self, vector: SparseVector, y: int) -> UpdateInfo:
        """:meth:`learn` of a vector validated at the edge and a label in {-1, +1}: every input form
        is made (the standardisation learns ``vector``), nothing is checked again."""
        self._refuse_if_borrowed()
        return self._learn_members(self._unchecked_kernels(vector, learn=True), y)

    def _checked_kernels(self, vectors: dict[str, Any], label: int) -> dict[str, SparseVector]:
        """Each form's vector checked once for all its members (they read the same vector), in the
        form their kernels read: the bits :meth:`_kernel_vectors` gives for a vector checked at the edge."""
        return {f: self.members[ks[0]].checked(vectors[f], label)[0] for f, ks in self._by_form.items()}

    def _vote(self, kernels: dict[str, SparseVector]) -> float:
        """The Fixed-Share vote of every member's margin on its form's kernel vector, less the vote's
        threshold: the members whose score is ``w . x`` (the linear family) in one compiled call per
        input form (:func:`~service.learners.first_order.linear_scores`, the same sums), the others
        one by one."""
        row = np.empty(len(self.members))
        self._scores.fill(self.members, kernels, row)
        return float(hedge_vote(self._vote_state.log_w, row)) - self._threshold()

    def _threshold(self) -> float:
        """The vote's decision threshold now (:func:`~service.learners.hedge.chosen_threshold`)."""
        return self._vote_state.threshold(
            self._tally.counts, self.objective == "cost", self.alpha_p, self.c_p
        )

    def _unchecked_kernels(
        self, vector: SparseVector, learn: bool = False, forms: Sequence[str] | None = None
    ) -> dict[str, SparseVector]:
        """``_kernel_vectors(inputs.vectors_unchecked(vector, learn, forms))``, the same bits, each form
        made by one kernel when its members read it without explicit zeros: the L2 form by
        :func:`~service.normalization.unit_l2_kernel_vector`, the standardised one by
        :func:`~service.learners.standardise.standard_kernel_vector` (which learns ``vector`` with
        ``learn``, whether or not the form is asked for)."""
        wanted = self.inputs.forms if forms is None else tuple(forms)
        if not self._forms_in_kernels:
            return self._kernel_vectors(self.inputs.vectors_unchecked(vector, learn, wanted))
        idx, val = vector
        out: dict[str, SparseVector] = {}
        if "l2" in wanted:
            first = self.members[self._by_form["l2"][0]]
            out["l2"] = unit_l2_kernel_vector(idx, val, *self._scores.entry_of(first))
        if "standard" in wanted or (learn and "standard" in self.inputs.forms):
            first, stats = self.members[self._by_form["standard"][0]], self.inputs.arrays
            made = standard_kernel_vector(
                idx, val, stats["std_count"], stats["std_mean"], stats["std_m2"], learn,
                *self._scores.entry_of(first, "standard"),
            )  # fmt: skip
            if "standard" in wanted:
                out["standard"] = made
        return out

    def _kernel_vectors(self, vectors: dict[str, SparseVector]) -> dict[str, SparseVector]:
        """Each form's vector as its members' kernels read it, unchecked: the bits :meth:`learn`'s
        ``checked`` gives. A transformed form (L2, standardised) loses the zeros that underflow made,
        as ``checked`` drops them for a member that does not read presence; the intercept is appended."""
        out = {}
        for form, vector in vectors.items():
            member = self.members[self._by_form[form][0]]
            if form != "raw" and not member.needs_presence:
                vector = nonzero(vector)
            out[form] = member.kernel_vector(vector)
        return out

    def _learn_members(self, kernels: dict[str, SparseVector], label: int) -> UpdateInfo:
        """One round for every member on its form's kernel vector; the selection learns the round.

        The members of one class over one input form whose round is the contract's own step in one
        compiled call (:class:`~service.learners.member_steps.MemberSteps`, the same bits as a call
        each); the vote and the tally then learn the label from the scores in one compiled call
        (:meth:`~service.learners.hedge.VoteState.learn_label`)."""
        chosen = self.leader()
        out = self._outcomes
        self._steps.step(self.members, kernels, label, out)
        hedge, scores = self.selection == "hedge", out.scores
        hedged, heaviest = self._vote_state.learn_label(
            scores, label, self._tally, hedge, self.objective == "cost", self.alpha_p, self.c_p
        )
        score = hedged if hedge else float(scores[chosen])
        self._leader = heaviest if hedge else None  # leader() of the counts and weights now
        return UpdateInfo(
            score, float(out.losses[chosen]), bool(np.count_nonzero(out.updated)), float(out.rhos[chosen])
        )

    def _hedge(self, predictions: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The scores before each label; the weights and the thresholds learn them (the class counts
        from the tally)."""
        counts, cost = self._tally.counts[0, :2], self.objective == "cost"
        return self._vote_state.steps(predictions, scores, labels, counts, cost, self.alpha_p, self.c_p)

    def run(self, X: Any, y: Any) -> StreamResult:
        """Progressive validation; bit-identical to :meth:`learn` row by row (state included).

        The members are independent, so each runs its whole stream at native speed; the
        leader before every row then follows from cumulative counts.
        """
        self._refuse_if_borrowed()
        streams = self.inputs.streams(X, y)  # checks X and y before anything changes
        results = [m.run(streams[form], y) for m, form in zip(self.members, self.member_forms, strict=True)]
        labels = np.asarray(y).astype(np.int64)
        n = labels.shape[0]
        predictions = np.stack([r.predictions for r in results], axis=1)
        steps = steps_of(labels, predictions)
        member_scores = np.stack([r.scores for r in results], axis=1)
        if self.selection == "hedge":
            P = np.ascontiguousarray(predictions, dtype=np.int8)
            scores = self._hedge(P, np.ascontiguousarray(member_scores, dtype=np.float64), labels)
        else:
            before = self._tally.before_each(steps, self.selection)
            chosen = best_member(objective_values(before, self.objective, self.alpha_p, self.c_p))
            scores = member_scores[np.arange(n), chosen]
        updated = np.any(np.stack([r.updated for r in results], axis=1), axis=1)
        self._leader = None
        self._tally.record_many(steps)
        return StreamResult(scores, updated)

    @property
    def rho(self) -> float:
        return self.members[0].rho

    @property
    def rho_estimate(self) -> float:
        return self.members[0].rho_estimate

    @property
    def params(self) -> dict[str, Any]:
        auto: dict[str, Any] = {"eta": "auto", "eta_grid": list(self.grid)}
        if self.losses is not None:
            auto["loss"] = "auto"
        if self.forests:
            auto["members"] = "auto"
        elif self.families:
            auto["members"] = "all"
        if self.inputs.forms != ("raw",):
            auto["inputs"] = list(self.inputs.forms)
        return {**self.members[0].params, **auto}

    def weights(self) -> np.ndarray:
        return self.members[self.leader()].weights()

    def state_nbytes(self) -> int:
        own = self._tally.recent.nbytes + self.inputs.nbytes()
        own += sum(a.nbytes for a in self._vote_state.arrays().values())
        return sum(m.state_nbytes() for m in self.members) + own

    def to_state(self, copy: bool = True) -> dict[str, Any]:
        """Every member's state (``members``, by index), the selection's counts and the inputs'
        statistics; copies, or unguarded read-only views with ``copy=False`` (see
        :meth:`Learner.to_state`)."""
        return self._state_dict(
            np.copy if copy else read_only, {str(k): m.to_state(copy) for k, m in enumerate(self.members)}
        )

    @contextlib.contextmanager
    def borrowed_state(self) -> Iterator[dict[str, Any]]:
        """:meth:`to_state` as read-only views, every member borrowed too: while the block
        lasts, ``learn``, ``run`` and ``load_state`` raise :class:`StateBorrowed`."""
        with contextlib.ExitStack() as stack:
            members = {str(k): stack.enter_context(m.borrowed_state()) for k, m in enumerate(self.members)}
            self._borrows += 1
            try:
                yield self._state_dict(read_only, members)
            finally:
                self._borrows -= 1

    def _family_names(self) -> list[str]:
        return [family_name(f) for f in (*self.families, *self.forests)]

    def _state_dict(
        self, share: Callable[[np.ndarray], np.ndarray], members: dict[str, Any]
    ) -> dict[str, Any]:
        extra: dict[str, Any] = {"families": self._family_names()} if self.families or self.forests else {}
        if self.inputs.forms != ("raw",):
            extra["inputs"] = list(self.inputs.forms)
        return {
            **extra,
            "format": STATE_FORMAT,
            "algorithm": self.algorithm,
            "n_features": self.n_features,
            "grid": share(np.array(self.grid)),
            "losses": list(self.losses or []),
            **{key: share(arr) for key, arr in self._tally.arrays().items()},
            **(self._vote_state.arrays(share) if self.selection == "hedge" else {}),
            **self.inputs.state(share),
            "members": members,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace every member's state, the selection's counts and the inputs' statistics;
        everything is checked (``format``, algorithm, dimension, grid, losses, families, inputs,
        members, array shapes) before anything changes."""
        self._refuse_if_borrowed()
        if state.get("format") != STATE_FORMAT:
            raise InvalidInput("state", f"format is {state.get('format')!r}, expected {STATE_FORMAT!r}")
        if state.get("algorithm") != self.algorithm or state.get("n_features") != self.n_features:
            raise InvalidInput("state", f"is for {state.get('algorithm')!r}, expected {self.algorithm!r}")
        if not np.array_equal(np.asarray(state.get("grid")), np.array(self.grid)):
            raise InvalidInput("state", "was written with another eta grid")
        if list(state.get("losses", [])) != list(self.losses or []):
            raise InvalidInput("state", "was written with other losses")
        if list(state.get("families", [])) != self._family_names():
            raise InvalidInput("state", "was written with other member families")
        if list(state.get("inputs", ["raw"])) != list(self.inputs.forms):
            raise InvalidInput("state", "was written with other input forms")
        members = state.get("members", {})
        if sorted(members) != sorted(str(k) for k in range(len(self.members))):
            raise InvalidInput("state", "has the wrong members")
        arrays = {}
        for key, current in self._tally.arrays().items():
            arr = np.asarray(state.get(key))
            if arr.dtype != current.dtype or arr.shape != current.shape:
                raise InvalidInput(
                    "state", f"{key!r} has {arr.dtype}{arr.shape}, expected {current.dtype}{current.shape}"
                )
            arrays[key] = np.array(arr, copy=True, order="C")
        if self.selection == "hedge":
            arrays |= self._vote_state.checked(state)
        statistics = self.inputs.checked_state(state)
        known = {"format", "algorithm", "n_features", "grid", "losses", "members", "families", "inputs"}
        extra = set(state) - set(arrays) - set(statistics) - known
        if extra:
            raise InvalidInput("state", f"unexpected entries {sorted(extra)}")
        clones = [type(m)(m.n_features, **m.params) for m in self.members]
        for clone, k in zip(clones, range(len(clones)), strict=True):
            clone.load_state(members[str(k)])  # validates before anything is replaced
        self.members = clones
        self._steps.forget()  # the old members' arrays go now, not at the next label
        self._scores.forget()
        if self.selection == "hedge":
            self._vote_state.load(arrays)
            del arrays["hedge_log_w"], arrays["hedge_threshold_mistakes"]
        self._tally.load(arrays)
        self.inputs.arrays = statistics
        self._leader = None
