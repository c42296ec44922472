"""The retry policy's waits and limits, and how refusals become exceptions."""

from __future__ import annotations

import email.utils
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.client import errors
from service.client.retry import RetryPolicy, parse_retry_after

policies = st.builds(
    RetryPolicy,
    attempts=st.integers(1, 20),
    backoff=st.floats(0, 2),
    max_backoff=st.floats(0, 10),
    max_retry_after=st.floats(0, 60),
    deadline=st.floats(0, 600),
)


@given(policies, st.integers(1, 30), st.one_of(st.none(), st.floats(0, 1e6)))
def test_a_wait_is_bounded_and_honours_retry_after(
    policy: RetryPolicy, attempt: int, after: float | None
) -> None:
    wait = policy.wait(attempt, after)
    if after is not None:  # the server's value, capped
        assert wait == min(after, policy.max_retry_after)
    else:  # equal jitter: between half and all of the capped exponential
        ceiling = min(policy.max_backoff, policy.backoff * 2 ** (attempt - 1))
        assert ceiling / 2 <= wait <= ceiling


@given(policies, st.one_of(st.none(), st.floats(0, 100)))
def test_no_wait_after_the_last_attempt_nor_past_the_deadline(
    policy: RetryPolicy, after: float | None
) -> None:
    started = time.monotonic()
    assert policy.next_wait(policy.attempts, started, after) is None
    wait = policy.next_wait(1, started, after)
    if wait is not None:
        assert time.monotonic() + wait - started <= policy.deadline + 1e-3
    assert RetryPolicy(attempts=5, deadline=0.0).next_wait(1, started - 1.0, after) is None


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= (parse_retry_after(later) or 0) <= 10


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (400, "body_unreadable", errors.InvalidRequest),
        (401, "unauthorized", errors.Unauthorized),
        (403, "forbidden", errors.Forbidden),
        (404, "unknown", errors.NotFound),
        (409, "label_conflict", errors.LabelConflict),
        (409, "generation_conflict", errors.Conflict),
        (410, "model_gone", errors.Gone),
        (413, "too_large", errors.TooLarge),
        (422, "finite_number", errors.InvalidRequest),
        (429, "rate_limited", errors.RateLimited),
        (503, "store_unavailable", errors.Unavailable),
        (500, "internal", errors.ServerError),
    ],
)
def test_each_status_has_its_exception_with_the_field_and_message(
    status: int, kind: str, expected: type[errors.ApiError]
) -> None:
    body = {"detail": [{"loc": ["body", "items", 3, "label"], "msg": "must be -1 or +1", "type": kind}]}
    error = errors.error_from(status, body, 2.0)
    assert type(error) is expected
    assert (error.status, error.field, error.message, error.kind, error.retry_after) == (
        status, "items.3.label", "must be -1 or +1", kind, 2.0
    )  # fmt: skip
    assert "items.3.label" in str(error)


def test_a_proxy_error_page_is_still_an_exception() -> None:
    error = errors.error_from_text(502, "<html>Bad Gateway</html>")
    assert isinstance(error, errors.ServerError) and "Bad Gateway" in error.message
