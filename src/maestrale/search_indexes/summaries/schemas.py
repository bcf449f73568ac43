"""The wire shapes of the summary routes (mistralai 3.x: GetSummaryResponseSummary,
UpdateSummaryRequestSummary, and the stream's SummaryMetadata, SummaryChunk, SummaryError)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, field_validator

# The largest summary stored, in UTF-8 bytes (a PUT past it is a 422).
MAX_CONTENT_BYTES = 64 * 1024


class Language(StrEnum):
    """The languages a summary field is kept in (the SDK's path enum)."""

    EN = "en"
    FR = "fr"
    ES = "es"
    DE = "de"
    IT = "it"
    PT_BR = "pt_br"
    PL = "pl"
    AR = "ar"
    NL = "nl"


# What the model is asked to write in.
LANGUAGE_NAMES = {
    Language.EN: "English",
    Language.FR: "French",
    Language.ES: "Spanish",
    Language.DE: "German",
    Language.IT: "Italian",
    Language.PT_BR: "Brazilian Portuguese",
    Language.PL: "Polish",
    Language.AR: "Arabic",
    Language.NL: "Dutch",
}

SummaryStatus = Literal["handwritten", "generated", "generated_confirmed"]


class SummaryOut(BaseModel):
    content: str
    status: SummaryStatus
    translated: bool


class SummaryUpdate(BaseModel):
    content: str
    status: Literal["handwritten", "generated_confirmed"]
    translated: bool

    @field_validator("content")
    @classmethod
    def _bounded(cls, value: str) -> str:
        if len(value) > MAX_CONTENT_BYTES or len(value.encode("utf-8")) > MAX_CONTENT_BYTES:
            raise ValueError(f"the summary is longer than {MAX_CONTENT_BYTES} bytes")
        return value
