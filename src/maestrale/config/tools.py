"""The settings of the tools the server runs: web search, image generation and the code
interpreter's sandbox. `Settings` inherits them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings


class ToolSettings(BaseSettings):
    # The web_search / web_search_premium tools (see maestrale.tools.web).
    web_search_url: str | None = Field(
        default=None,
        description="base URL of a SearxNG-compatible search API (`GET {url}/search?q=...&format"
        "=json`); unset: the web_search tools are unavailable",
    )
    web_search_backend: Literal["searxng"] = Field(
        default="searxng", description="the protocol web_search_url speaks"
    )
    web_search_timeout_seconds: float = Field(
        default=15.0, gt=0, le=300, description="a query to the search backend"
    )
    web_search_results: int = Field(default=5, ge=1, le=20, description="sources of web_search")
    web_search_premium_results: int = Field(
        default=10, ge=1, le=20, description="sources of web_search_premium"
    )
    web_search_fetch_pages: bool = Field(
        default=False,
        description="web_search also fetches its results' pages (web_search_premium always does)",
    )
    web_search_page_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="fetching one result's page (pages in parallel)"
    )
    web_search_page_max_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="largest result page read"
    )
    web_search_page_chars: int = Field(
        default=4000, ge=100, le=100_000, description="text of a fetched page given to the model"
    )
    web_search_max_response_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="largest answer of the search backend"
    )
    web_search_allow_private: bool = Field(
        default=False,
        description="let result pages be fetched from loopback, private and link-local hosts"
        " (the backend itself, operator configuration, may be anywhere)",
    )
    # The image_generation tool (see maestrale.tools.images).
    image_generation_url: str | None = Field(
        default=None,
        description="base URL of an OpenAI-compatible images API (`POST {url}/images/generations`"
        "); unset: the image_generation tool is unavailable",
    )
    image_generation_model: str | None = Field(
        default=None, description="the upstream's model of image_generation (required)"
    )
    image_generation_api_key_env: str | None = Field(
        default=None, description="environment variable holding the upstream's API key"
    )
    image_generation_sizes: list[str] = Field(
        default_factory=lambda: ["1024x1024"],
        min_length=1,
        description="sizes the model may ask for (WIDTHxHEIGHT); the first is the default",
    )
    image_generation_timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="one image generation, download included"
    )
    image_generation_max_bytes: int = Field(
        default=20 * 1024 * 1024, ge=1024, description="largest image accepted from the upstream"
    )
    image_generation_allow_private: bool = Field(
        default=False,
        description="let an image `url` the upstream answers be on a loopback, private or"
        " link-local host",
    )
    # The code_interpreter tool (see maestrale.tools.code): Python in a bubblewrap sandbox.
    code_interpreter_enabled: bool = Field(default=True, description="offer code_interpreter")
    code_interpreter_bwrap: str = Field(
        default="bwrap", description="the bubblewrap executable (a name on PATH or a path)"
    )
    code_interpreter_python: str | None = Field(
        default=None,
        description="the Python interpreter run in the sandbox (its runtime bound read-only);"
        " unset: the server's own",
    )
    code_interpreter_site_packages: bool = Field(
        default=True,
        description="bind that interpreter's site-packages read-only (NumPy and the other"
        " installed libraries importable; the server's own package hidden)",
    )
    code_interpreter_cpu_seconds: int = Field(
        default=30, ge=1, le=3600, description="CPU time of each process of a run (RLIMIT_CPU)"
    )
    code_interpreter_wall_seconds: float = Field(
        default=60.0, gt=0, le=3600, description="wall time of a run"
    )
    code_interpreter_memory_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=64 * 1024 * 1024,
        description="address space of each process (RLIMIT_AS), and resident memory of all a"
        " run's processes together",
    )
    code_interpreter_processes: int = Field(
        default=32, ge=1, le=4096, description="processes and threads of a run (RLIMIT_NPROC)"
    )
    code_interpreter_file_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, description="largest file a run writes (RLIMIT_FSIZE)"
    )
    code_interpreter_scratch_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1024 * 1024,
        description="size of a run's scratch directory (a tmpfs), and of its /tmp and /dev/shm",
    )
    code_interpreter_output_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="stdout and stderr of a run together; beyond it the run is stopped",
    )
    code_interpreter_max_files: int = Field(
        default=10, ge=0, le=100, description="files of a run given back as Files API files"
    )
    code_interpreter_files_bytes: int = Field(
        default=32 * 1024 * 1024, ge=0, description="total size of the files given back"
    )
    code_interpreter_concurrency: int = Field(
        default=4, ge=1, le=256, description="runs at once in a process (more wait their turn)"
    )
    code_interpreter_concurrency_per_workspace: int = Field(
        default=3,
        ge=1,
        le=256,
        description="runs of one workspace at once (a slot stays free for"
        " others); waiting runs take turns between workspaces",
    )
    code_interpreter_queue_seconds: float = Field(
        default=60.0, gt=0, description="a run waiting longer for a slot fails with a clear error"
    )
    code_interpreter_sandbox_uid: int = Field(
        default=65534,
        ge=1,
        description="uid (and gid) bwrap runs as when the server runs as root (the kernel does"
        " not apply RLIMIT_NPROC to root)",
    )
