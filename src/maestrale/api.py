"""The /v1 router: every domain router, alphabetically."""

from __future__ import annotations

from fastapi import APIRouter

from maestrale.admin.router import router as admin_router
from maestrale.batch.router import router as batch_router
from maestrale.catalog.router import router as catalog_router
from maestrale.completions.router import router as completions_router
from maestrale.files.router import router as files_router

api_router = APIRouter(prefix="/v1")
api_router.include_router(batch_router)
api_router.include_router(catalog_router)
api_router.include_router(completions_router)
api_router.include_router(files_router)
# Last: its catch-all must not shadow any other route.
api_router.include_router(admin_router)
