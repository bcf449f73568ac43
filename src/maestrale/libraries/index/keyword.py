"""The keyword side of the index: SQLite FTS5 (bm25) or Postgres full-text search (ts_rank).

A query never reaches either engine's query language as typed: it is cut into words, and the
words are quoted (FTS5) or joined by `or` for `websearch_to_tsquery`, which takes any text.
Whatever the query holds (operators, quotes, NULs, lone surrogates, 100 KB), it cannot raise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.keyword_repository import Fts5Keywords, TsvectorKeywords
from maestrale.libraries.index.tables import LIBRARY_TOKEN_COLUMN

# Words only (letters, digits, `_`): no operator, quote or control character survives.
_WORD = re.compile(r"\w+")
# A query asks for at most this many distinct words, each at most this long.
MAX_TERMS = 32
MAX_TERM_LENGTH = 64
# Only so much of a query is read for its words.
MAX_QUERY_CHARS = 20_000
# Words held by more than this fraction of the chunks are left out of a search (on SQLite
# once the index holds this many chunks): FTS5's bm25 floors their IDF at ~0 and ts_rank
# weighs them like any other word, while each costs a pass over that many chunks.
COMMON_WORDS_AFTER = 1000
COMMON_FRACTION = 0.5
# A keyword search is narrowed to its libraries in the FTS5 index unless they hold more than
# this fraction of the chunks.
NARROW_FRACTION = 0.5
# Not narrowed, the index ranks this many times the chunks asked for before their libraries
# are checked.
OVERFETCH = 4


def terms(query: str) -> list[str]:
    """The distinct words of `query`, lower-cased, in order of appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(query[:MAX_QUERY_CHARS]):
        word = match.group().lower()
        # `_` is a word character to `re`, a separator to both engines' tokenizers.
        if len(word) > MAX_TERM_LENGTH or not word.strip("_"):
            continue
        seen.setdefault(word, None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


async def ranking(
    session: AsyncSession, *, library_ids: Sequence[str], query: str, n: int
) -> list[int]:
    """The ids of the `n` chunks of these libraries that best match `query`'s words, best first."""
    words = terms(query)
    if not words:
        return []
    if (await session.connection()).dialect.name == "sqlite":
        return await _sqlite(Fts5Keywords(session, library_ids), words, n)
    return await _postgres(TsvectorKeywords(session, library_ids), words, n)


async def _sqlite(index: Fts5Keywords, words: list[str], n: int) -> list[int]:
    tokens = {library_id: library_id.replace("-", "") for library_id in index.library_ids}
    words, narrow = await _plan(index, words, tokens)
    match = "{text} : (" + " OR ".join(_phrase(word) for word in words) + ")"
    if narrow:
        # The libraries' chunks are intersected with the words' in the index itself (column
        # `library_token`: the id without its dashes, one token), so that only they are
        # ranked. bm25 weighs that column at 0.
        libraries = " OR ".join(_phrase(token) for token in tokens.values())
        match = f"{{{LIBRARY_TOKEN_COLUMN}}} : ({libraries}) AND {match}"
    # Not narrowed, the libraries hold most chunks: a few times `n` of the best are enough,
    # almost always.
    fetched = n if narrow else OVERFETCH * n
    found, ranked = await index.best(match, fetched)
    found = found[:n]
    if len(found) == n or ranked < fetched:
        return found
    # Too many of the best were other libraries' (or shared a library's token): rank the
    # libraries' matches only, checking each.
    return await index.best_in_libraries(match, n)


def _phrase(value: str) -> str:
    """`value` as an FTS5 string (a phrase of its tokens, never an operator)."""
    return '"' + value.replace('"', '""') + '"'


async def _plan(
    index: Fts5Keywords, words: list[str], tokens: dict[str, str]
) -> tuple[list[str], bool]:
    """The words to search for, and whether to narrow the match to the libraries in the index.

    On a large index, words in more than half the chunks are left out (always keeping the
    rarest word): FTS5 weighs them at ~0, and they would make most chunks a match. The chunk
    count is bounded from above by the span of the ids, so a word left out is always one that
    FTS5 itself weighs at ~0. The match is narrowed to the libraries unless they hold most of
    the chunks (then the narrowing costs more than the matches it saves)."""
    span = await index.id_span()
    if not span or span < COMMON_WORDS_AFTER:
        return words, True
    # The vocabulary holds tokens as the tokenizer folds them: a UUID's are lower-cased.
    library_terms = [token.lower() for token in tokens.values()]
    counts = await index.chunk_counts([*words, *library_terms])
    frequency = {word: counts.get(("text", word), 0) for word in words}
    kept = [word for word in words if frequency[word] <= span * COMMON_FRACTION]
    in_libraries = sum(counts.get((LIBRARY_TOKEN_COLUMN, term), 0) for term in library_terms)
    return kept or [min(words, key=frequency.__getitem__)], in_libraries <= span * NARROW_FRACTION


async def _postgres(index: TsvectorKeywords, words: list[str], n: int) -> list[int]:
    # `or` between words is websearch_to_tsquery's disjunction; the word "or" itself would
    # be read as one, and is no keyword worth searching.
    words = await _without_frequent_lexemes(index, [word for word in words if word != "or"])
    query = " or ".join(words)
    if not query:
        return []
    return await index.best(query, n)


async def _without_frequent_lexemes(index: TsvectorKeywords, words: list[str]) -> list[str]:
    """`words` less those ANALYZE found in more than half the chunks (always keeping the
    rarest word). ts_rank weighs every word of the query alike, however common: such words
    only slow the search down (every chunk holding one is ranked) and blur the ranking."""
    if not words:
        return words
    frequencies = await index.lexeme_frequencies()
    if frequencies is None:
        return words
    kept = [word for word in words if frequencies.get(word, 0.0) <= COMMON_FRACTION]
    return kept or [min(words, key=lambda word: frequencies.get(word, 0.0))]
