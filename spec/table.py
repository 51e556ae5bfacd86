"""The whole table: every row module's rows, each with the checks that settle it.

The row types and the shared constants are rows.py's; each rows_*.py module
holds one part of the table (its ROWS, and SETTLED for rows settled by a
named check); this module joins them.
"""

from __future__ import annotations

from dataclasses import replace

from lse.spec import (rows_behaviour, rows_embeddings, rows_http, rows_messages, rows_models, rows_requests,
                      rows_responses, rows_responses_api, rows_robust, rows_speculative, rows_structured)
from lse.spec.rows import SETTLED, Row, ThinkingModel


def all_rows() -> tuple[Row, ...]:
    rows = (rows_requests.ROWS + rows_responses.ROWS + rows_behaviour.ROWS + rows_structured.ROWS + rows_http.ROWS
            + rows_robust.ROWS + rows_responses_api.ROWS + rows_messages.ROWS + rows_models.ROWS
            + rows_speculative.ROWS + rows_embeddings.ROWS)
    settled = {**SETTLED, **rows_structured.SETTLED, **rows_http.SETTLED, **rows_robust.SETTLED,
               **rows_responses_api.SETTLED, **rows_messages.SETTLED, **rows_models.SETTLED,
               **rows_speculative.SETTLED, **rows_embeddings.SETTLED}
    return tuple(replace(r, settles=settled[r.id]) if r.id in settled else r for r in rows)


def rows_by_id() -> dict[str, Row]:
    return {row.id: row for row in all_rows()}


def fixtures_named(rows: tuple[Row, ...] | None = None) -> tuple[str, ...]:
    """The fixture models whose behaviour some row describes."""
    rows = all_rows() if rows is None else rows
    return tuple(sorted({r.fixture for r in rows if isinstance(r, ThinkingModel) and r.fixture}))


