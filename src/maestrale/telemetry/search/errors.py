"""The search language's errors: a 4xx naming what is wrong and where, with the
ObservabilityErrorCode the observability routes render it with (`error_code`)."""

from __future__ import annotations

from maestrale.core.errors import BadRequest

# A syntax error of the expression (the reference's code for it); any other refusal of a
# search (unknown field, operator, value) is a SEARCH_BAD_REQUEST.
PARSE_ERROR = "TRACES_FILTER_QUERY_PARSE_ERROR"
BAD_SEARCH = "SEARCH_BAD_REQUEST"


class SearchError(BadRequest):
    """A search expression the server refuses: a syntax error (with its position), an unknown
    field, an operator the field's type does not support, a value of the wrong type or out of
    range, a regular expression RE2 cannot run, or an expression past the limits."""

    def __init__(self, message: str, error_code: str = BAD_SEARCH, status_code: int = 400) -> None:
        super().__init__(message, status_code=status_code)
        self.error_code = error_code
