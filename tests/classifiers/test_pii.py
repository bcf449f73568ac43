"""PII recognisers: checksums decide, not the look of a number."""

from __future__ import annotations

import pytest

from maestrale.engines.local.moderation.pii import PiiDetector, find_pii, iban_valid, luhn_valid


@pytest.mark.parametrize(
    ("number", "valid"),
    [
        ("4111111111111111", True),
        ("4111111111111112", False),
        ("5555555555554444", True),
        ("378282246310005", True),
        ("378282246310006", False),
        ("79927398713", True),
        ("79927398710", False),
        ("12a4", False),
    ],
)
def test_luhn(number: str, valid: bool) -> None:
    assert luhn_valid(number) is valid


@pytest.mark.parametrize(
    ("iban", "valid"),
    [
        ("GB82 WEST 1234 5698 7654 32", True),
        ("GB82 WEST 1234 5698 7654 33", False),  # one digit changed: mod 97 fails
        ("DE89370400440532013000", True),
        ("DE89370400440532013001", False),
        ("FR1420041010050500013M02606", True),
        ("NL91ABNA0417164300", True),
        ("NL91ABNA04171643000", False),  # right checksum is impossible at the wrong length
        ("XX00", False),
    ],
)
def test_iban(iban: str, valid: bool) -> None:
    assert iban_valid(iban) is valid


def _kinds(text: str) -> set[str]:
    return {f.kind for f in find_pii(text)}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to jane.doe+news@example.co.uk today", "email"),
        ("card 4111 1111 1111 1111 expires soon", "credit_card"),
        ("card 4111-1111-1111-1111", "credit_card"),
        ("pay to GB82 WEST 1234 5698 7654 32 please", "iban"),
        ("host 192.168.1.20 is down", "ip_address"),
        ("host 2001:db8::1 is down", "ip_address"),
        ("call +33 6 12 34 56 78 tonight", "phone"),
        ("call (212) 555-0123 tonight", "phone"),
    ],
)
def test_finds(text: str, kind: str) -> None:
    assert kind in _kinds(text)


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 is not a card number",  # Luhn fails
        "meet at 12:30 on 2024-01-15",
        "I have 3 cats and 12 dogs",
        "the address 999.1.1.1 is not an IP",
        "an email without a domain: someone@",
        "a plain sentence with no personal data",
    ],
)
def test_ignores(text: str) -> None:
    assert find_pii(text) == []


def test_detector_without_spacy_reports_why() -> None:
    detector = PiiDetector(None)
    assert detector.ner_unavailable
    assert detector.score("mail me at a.b@example.org") > 0.9
    assert detector.score("nothing to see here") == 0.0


def test_detector_with_a_missing_spacy_model_keeps_patterns() -> None:
    detector = PiiDetector("no_such_spacy_model_xyz")
    assert detector.score("card 5555 5555 5555 4444") > 0.9
    assert detector.ner_unavailable is not None
