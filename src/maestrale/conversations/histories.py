"""This process's copies of the conversation histories it read last, so that an append reads only
the entries added since its previous read instead of the whole history.

Safe across requests and replicas because entries are append-only and immutable: an entry is
never changed once written (but for the `confirmation_status` of a server tool call, set from
"pending" to "allowed" or "denied" once answered: a copy that still says "pending" is as good,
since such a call is no message and what answers it is its tool.execution entry, see
`loop.confirmations`), a conversation's entries are numbered 0, 1, ... (`seq`), and its
`entry_count` — the next number — is committed with them, so the first `entry_count` entries of
a row read at any time are committed and final. A copy of the first k entries,
read from the database, therefore stays right; an append whose conversation has n ≥ k entries
reads those from k on, whichever replica wrote them, and one with n < k (impossible unless the
database was rewritten) drops the copy. Only entries read from the database (committed) are kept,
never the ones an append is writing (its transaction may still roll back). Conversation ids are
random and never reused; a deleted conversation is not found, and its copy is dropped by the
replica that deleted it (it ages out of the others').

With a copy goes the prefix of turn messages the last append built from its entries (see
`loop.turn_request.TurnPrefix`), so that the next append converts and checks only the entries
after it.

Bounded: beyond `max_entries` entries in all (a prefix's messages counted too), the least
recently used copies are dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, NamedTuple

from maestrale.conversations.loop.turn_request import EMPTY, TurnPrefix

Entries = tuple[dict[str, Any], ...]


class Copy(NamedTuple):
    """The first entries of a conversation, and the turn messages of the first of them."""

    entries: Entries = ()
    prefix: TurnPrefix = EMPTY

    @property
    def size(self) -> int:
        return len(self.entries) + len(self.prefix.messages)


NONE = Copy()


class Histories:
    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._copies: OrderedDict[tuple[str, str], Copy] = OrderedDict()
        self._size = 0

    def get(self, key: tuple[str, str], entry_count: int) -> Copy:
        """The copy of the first entries of the conversation (`key`: workspace id and
        conversation id) that has `entry_count` entries: empty when there is none."""
        copy = self._copies.get(key)
        if copy is None:
            return NONE
        if len(copy.entries) > entry_count:
            self.drop(key)
            return NONE
        self._copies.move_to_end(key)
        return copy

    def put(self, key: tuple[str, str], entries: Entries, prefix: TurnPrefix = EMPTY) -> None:
        """Keep `entries`, the conversation's entries as read from the database, and the turn
        messages of the first `prefix.count` of them."""
        assert prefix.count <= len(entries)
        self.drop(key)
        copy = Copy(entries, prefix)
        if copy.size > self.max_entries:
            return
        self._copies[key] = copy
        self._size += copy.size
        while self._size > self.max_entries:
            _, dropped = self._copies.popitem(last=False)
            self._size -= dropped.size

    def drop(self, key: tuple[str, str]) -> None:
        copy = self._copies.pop(key, None)
        if copy is not None:
            self._size -= copy.size

    def __len__(self) -> int:
        return self._size
