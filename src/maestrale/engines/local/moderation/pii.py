"""PII recognisers: patterns confirmed by checksums or structure, plus optional spaCy names.

Each recogniser finds candidates with a regular expression and keeps only those that pass a
check a random string rarely passes: Luhn for card numbers, ISO 7064 mod 97 for IBANs, the
`ipaddress` parser for IP addresses, digit counts for phone numbers. The score of a finding says
how sure the check makes us (a Luhn-valid 16-digit number is almost surely a card number; a
10-digit number with separators is only probably a phone number).

Named entities (people, places) need a statistical model: when `spacy` and the model named in
the engine options are installed, PERSON / GPE / LOC entities count too; otherwise they are not
detected, and the engine says so in its description.
"""

from __future__ import annotations

import importlib
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Finding",
    "PiiDetector",
    "find_pii",
    "iban_valid",
    "luhn_valid",
]


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # email | phone | credit_card | iban | ip_address | person | location
    text: str
    start: int
    end: int
    score: float


_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
# 13 to 19 digits, optionally in groups separated by single spaces or dashes.
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# Country code, check digits, then 11 to 30 alphanumerics, optionally in groups of four.
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
# An optional +country code, then digit groups separated by spaces, dots, dashes or parentheses.
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?\d{1,4}(?:[ .-]?\d{2,4}){1,5}"
    r"|(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4})(?!\w)"
)
_DATE_LIKE = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}$")

# IBAN lengths per country (ISO 13616 registry, the common ones); others need 15 to 34.
_IBAN_TABLE = """
AD24 AT20 BE16 BG22 CH21 CY28 CZ24 DE22 DK18 EE20 ES24 FI18 FR27 GB22 GR27 HR21 HU28 IE22
IS26 IT27 LI21 LT20 LU20 LV21 MC27 MT31 NL18 NO15 PL28 PT25 RO24 SE24 SI19 SK24 SM27 TR26
"""
_IBAN_LENGTHS = {entry[:2]: int(entry[2:]) for entry in _IBAN_TABLE.split()}


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of payment card numbers."""
    if not digits.isdigit():
        return False
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char)
        if i % 2 == 1:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    """ISO 13616: the country's length, and mod 97 of the rearranged number equals 1."""
    compact = iban.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", compact):
        return False
    expected = _IBAN_LENGTHS.get(compact[:2])
    if expected is not None and len(compact) != expected:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(char, 36)) for char in rearranged)
    return int(number) % 97 == 1


def _card_score(digits: str) -> float:
    if not 13 <= len(digits) <= 19 or not luhn_valid(digits) or len(set(digits)) == 1:
        return 0.0
    # Known issuer prefixes (Visa, Mastercard, Amex, Discover, JCB, ...) make it near certain.
    if re.match(r"4|5[1-5]|2[2-7]|3[47]|6(?:011|5)|35", digits):
        return 0.99
    return 0.8


def _ip_score(text: str) -> float:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return 0.0
    if isinstance(address, ipaddress.IPv6Address) and text.count(":") < 3:
        return 0.0  # "12:30" style times are not addresses
    if address.is_unspecified:
        return 0.0
    return 0.9


def _phone_score(text: str) -> float:
    digits = re.sub(r"\D", "", text)
    if not 8 <= len(digits) <= 15 or _DATE_LIKE.match(text) or len(set(digits)) == 1:
        return 0.0
    if text.startswith("+") or "(" in text:
        return 0.9
    if len(digits) >= 10:
        return 0.75
    return 0.6


def _regex_findings(text: str) -> list[Finding]:
    found: list[Finding] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, match: re.Match[str], score: float) -> None:
        if score <= 0:
            return
        start, end = match.span()
        if any(start < e and s < end for s, e in taken):
            return  # a stronger recogniser already claimed these characters
        taken.append((start, end))
        found.append(Finding(kind, match.group(), start, end, score))

    for match in _EMAIL.finditer(text):
        add("email", match, 0.99)
    for match in _IBAN.finditer(text):
        add("iban", match, 0.99 if iban_valid(match.group()) else 0.0)
    for match in _CARD.finditer(text):
        add("credit_card", match, _card_score(re.sub(r"\D", "", match.group())))
    for match in _IPV4.finditer(text):
        add("ip_address", match, _ip_score(match.group()))
    for match in _IPV6.finditer(text):
        add("ip_address", match, _ip_score(match.group()))
    for match in _PHONE.finditer(text):
        add("phone", match, _phone_score(match.group()))
    return found


def find_pii(text: str) -> list[Finding]:
    """The pattern findings of `text` (no named entities), in no particular order."""
    return _regex_findings(text)


_NER_KINDS = {"PERSON": ("person", 0.85), "GPE": ("location", 0.6), "LOC": ("location", 0.6)}


class PiiDetector:
    """Pattern recognisers, plus spaCy named entities when `spacy_model` is given and loads.

    `nlp` is loaded lazily on the first call (on the engine's worker thread); a model that
    cannot be loaded disables named entities with the reason kept in `ner_unavailable`.
    """

    def __init__(self, spacy_model: str | None = None) -> None:
        self._spacy_model = spacy_model
        self._nlp: Callable[[str], Any] | None = None
        self.ner_unavailable: str | None = None if spacy_model else "no spaCy model configured"

    def _load_nlp(self) -> Callable[[str], Any] | None:
        if self._nlp is None and self.ner_unavailable is None and self._spacy_model:
            try:
                spacy = importlib.import_module("spacy")  # optional, and heavy
                self._nlp = spacy.load(self._spacy_model, disable=["lemmatizer"])
            except (ImportError, OSError) as exc:
                self.ner_unavailable = f"spaCy model {self._spacy_model!r} unavailable: {exc}"
        return self._nlp

    def find(self, text: str) -> list[Finding]:
        """Every finding of `text`: patterns first, then named entities that do not overlap."""
        found = _regex_findings(text)
        nlp = self._load_nlp()
        if nlp is not None:
            for ent in nlp(text).ents:
                kind = _NER_KINDS.get(ent.label_)
                if kind is None:
                    continue
                if any(ent.start_char < f.end and f.start < ent.end_char for f in found):
                    continue
                found.append(Finding(kind[0], ent.text, ent.start_char, ent.end_char, kind[1]))
        return found

    def score(self, text: str) -> float:
        """The PII score of `text`: the most certain finding's score, 0 without findings."""
        return max((f.score for f in self.find(text)), default=0.0)
