"""Stopping the engine's background tasks without hanging.

Two things make a plain ``task.cancel(); await task`` unsafe around redis-py:

- redis-py bounds each read with ``asyncio.timeout``; on Python 3.11, a task cancelled at the
  moment such a timeout also fires can see the cancellation come out as ``TimeoutError``, which the
  store reports as :class:`~model_store.StoreUnavailable`. A loop that retries on that error runs
  on after ``cancel()``: :func:`reraise_cancellation` is for its ``except`` clauses.
- a task cancelled in the middle of a blocking read (``XREAD BLOCK``) can be left waiting on a
  future that nothing completes (seen with redis-py 8.1), so awaiting it never returns.

So the loops that block in Redis (the log followers, the control follower) stop on a flag they
check between reads, which return at least every second; :func:`finish` waits for that and only
then cancels, and gives up waiting rather than hang a shutdown.
"""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("acog.engine")


def reraise_cancellation() -> None:
    """Raise ``CancelledError`` if the current task has been asked to stop; call it where a loop
    catches an error and would otherwise go on."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def finish(task: asyncio.Task[None] | None, within: float, *, cancel_first: bool = False) -> None:
    """Wait up to ``within`` seconds for ``task`` to end (``cancel_first``: cancel it at once), then
    cancel it and wait a little more; never raise, never wait for ever."""
    if task is None or task.done():
        return
    if cancel_first:
        task.cancel()
    done, _ = await asyncio.wait({task}, timeout=within)
    if not done:
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=1.0)
    if not done:
        log.warning("task %s did not stop; abandoned", task.get_name())
    elif not task.cancelled() and task.exception() is not None:
        log.warning("task %s ended with %r", task.get_name(), task.exception())
