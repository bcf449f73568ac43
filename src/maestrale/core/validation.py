"""Validation failures found outside FastAPI's own request parsing (form fields of a streamed
upload, the body of a batch line), answered in FastAPI's 422 shape, which the SDKs parse."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from maestrale.core.errors import AppError


class RequestInvalid(AppError):
    """422 with `{"detail": [{"loc", "msg", "type"}]}`, `loc` rooted at `where`."""

    status_code = 422
    code = "validation_error"

    def __init__(self, error: ValidationError, where: str = "body") -> None:
        self.detail = [
            {"loc": [where, *err.get("loc", ())], "msg": str(err["msg"]), "type": err["type"]}
            for err in error.errors(include_url=False, include_input=False)
        ]
        first = self.detail[0] if self.detail else {"loc": [where], "msg": "invalid value"}
        field = ".".join(str(part) for part in first["loc"][1:]) or where
        super().__init__(f"{field}: {first['msg']}")

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail}


def parse_body(model: type[BaseModel], body: dict[str, Any]) -> Any:
    """`body` as `model`; a validation failure is the 422 the live endpoint gives."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise RequestInvalid(exc) from exc
