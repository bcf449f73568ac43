"""Request and response bodies of the reading routes, as the SDK's models give them. Bounds the
SDK does not declare (top_k, candidates, sizes of a filter) are checked by the services and
answered with a 400, not by the schema (which would answer 422)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Leaf(BaseModel):
    top_k: int = 20
    filter: dict[str, Any] | None = None


class KeywordRetriever(_Leaf):
    """Chunks with the query's words: ranked by the index's keyword engine."""

    type: Literal["keyword"] = "keyword"
    query: str
    operator: Literal["or", "and"] = "or"
    field: str | None = None


class NearestNeighbourRetriever(_Leaf):
    """Chunks whose embeddings are nearest to the query's (or to `query_embedding`)."""

    type: Literal["nearest_neighbour"] = "nearest_neighbour"
    query: str | None = None
    query_embedding: list[float] | None = None
    field: str | None = None
    max_candidates: int | None = None


class RRFRetriever(_Leaf):
    """Reciprocal rank fusion of child retrievers (keyword or nearest neighbour)."""

    type: Literal["rrf"] = "rrf"
    # Any retriever parses here, so that a nested `rrf` is a clear 400, not a 422.
    retrievers: list[Retriever]
    weights: list[float] | None = None
    rank_constant: int = 60


Retriever = Annotated[
    KeywordRetriever | NearestNeighbourRetriever | RRFRetriever, Field(discriminator="type")
]
RRFRetriever.model_rebuild()


class SearchRequest(BaseModel):
    retriever: Retriever


class NavigateRequest(BaseModel):
    source_id: str
    start_offset: int
    end_offset: int
    direction: Literal["next", "previous"]
    top_k: int = 1
    content_type: str = "content"


class ReadRequest(BaseModel):
    source_id: str
    start_offset: int | None = None
    end_offset: int | None = None
    top_k: int = 20
    content_type: str = "content"


class GrepRequest(BaseModel):
    source_id: str
    pattern: str
    # The SDK's modes, and `regex` (RE2 syntax) for raw HTTP callers.
    mode: Literal["phrase", "term", "regex"] | None = None
    top_k: int = 5
    content_type: str = "content"


class ChunkOut(BaseModel):
    """The wire chunk: its atom fields, then the index's custom chunk fields."""

    model_config = ConfigDict(extra="allow")

    id: str
    source_id: str
    locator: str
    start_offset: int | None
    end_offset: int | None
    chunk_type: str
    content: str
    parent_ref: str | None = None
    metadata: dict[str, Any] = {}


class SearchHitOut(BaseModel):
    chunk: ChunkOut
    score: float
    index_name: str
    distance: float | None = None


class SearchResponseOut(BaseModel):
    hits: list[SearchHitOut]


class NavigationResponseOut(BaseModel):
    """Chunks in reading order (ascending start_offset)."""

    chunks: list[ChunkOut]
