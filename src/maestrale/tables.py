"""Imports every domain's tables so that `Base.metadata` is complete (migrations, checks)."""

from maestrale.catalog import tables as catalog_tables
from maestrale.core.auth import tables as auth_tables
from maestrale.core.db import Base
from maestrale.core.jobs import tables as job_tables

metadata = Base.metadata

__all__ = ["auth_tables", "catalog_tables", "job_tables", "metadata"]
